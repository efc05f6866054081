// The transcript of one debate: turns grouped by phase (and round), rendered from Markdown in the
// browser. The server sends a snapshot once (the `turns` prop); after that the debate's live stream
// ("rl" items, see static/live/index.js) grows it. Nothing shown is taken back: an attempt cut off by a
// pause or an error stays, greyed, above its redo.
import {
  subscribe, markdown, plainText, setImageHosts, grew, startFollowing, jumpToLive, onJumpChange,
} from "rostrum-live";
import { TurnTalk } from "rostrum-talk";

const ACTS = {
  ask: "question", answer: "answer", prepare: "preparation", propose: "proposal",
  critique: "critique", refine: "refinement", synthesize: "synthesis",
};

export default {
  components: { "turn-talk": TurnTalk },
  template: `
    <div class="rostrum-transcript w-full">
      <div v-if="!items.length" class="rostrum-empty">{{ empty }}</div>
      <template v-for="row in rows" :key="row.id">
        <h2 v-if="row.header" class="rostrum-group-title">{{ row.header }}</h2>
        <article v-else class="rostrum-turn" :class="['rostrum-turn-' + row.t.state, {'rostrum-turn-lazy': row.t.lazy}]"
                 :data-key="row.t.key || 'k' + row.t.kid" :style="{'--turn-color': person(row.t).color}">
          <header class="rostrum-turn-head">
            <span class="rostrum-dot" :style="{background: person(row.t).color}"></span>
            <span class="rostrum-turn-name">{{ person(row.t).name }}</span>
            <span v-if="acts[row.t.act]" class="rostrum-turn-act">{{ acts[row.t.act] }}</span>
            <span v-if="person(row.t).model" class="rostrum-turn-model">{{ person(row.t).model }}</span>
            <span class="rostrum-turn-meta">{{ row.t.meta }}</span>
          </header>
          <section v-for="(cut, i) in row.t.cuts" :key="'cut' + i" class="rostrum-cut">
            <div class="rostrum-md" v-html="render(cut.text, true)"></div>
            <p class="rostrum-note">{{ cutNote(cut, row.t) }}</p>
          </section>
          <div v-if="row.t.state === 'live' && !row.t.text" class="rostrum-thinking">thinking…</div>
          <div v-else-if="row.t.state !== 'cut'" class="rostrum-md rostrum-turn-text"
               :class="{'rostrum-caret': row.t.state === 'live'}" v-html="body(row.t)"></div>
          <p v-for="(note, i) in row.t.notes" :key="'note' + i" class="rostrum-note">{{ note }}</p>
          <turn-talk v-if="row.t.state === 'final' && row.t.key" :tkey="row.t.key"></turn-talk>
        </article>
      </template>
      <div class="rostrum-transcript-end"></div>
      <button v-show="showJump" type="button" class="rostrum-jump-live" @click="jump">Jump to live ↓</button>
    </div>`,
  props: {
    turns: Array,
    people: Object,
    empty: String,
    images: Array,
    follow: Boolean,
    ended: Boolean,
  },
  data() {
    return { items: [], acts: ACTS, over: this.ended, lastResync: 0, resyncLater: null, showJump: false };
  },
  computed: {
    rows() {
      const rows = [];
      let group = null;
      for (const t of this.items) {
        // (A turn known only from its commit's short form has no group until a resync: it stays under
        // the group before it; a header row without a title would be drawn as a turn and break the page.)
        if (t.group !== undefined && t.group !== group) {
          group = t.group;
          rows.push({ id: "g" + rows.length + ":" + group, header: group });
        }
        rows.push({ id: "t" + t.kid, t });
      }
      return rows;
    },
  },
  watch: {
    turns: { handler() { this.load(); } },
    ended(value) { this.over = value; },
  },
  created() {
    performance.mark("rostrum-transcript-created"); // bench/page_build.py reads these marks
    setImageHosts(this.images || []);
    this.load();
  },
  mounted() {
    performance.mark("rostrum-transcript-mounted");
    this.unsubscribe = subscribe((items) => this.apply(items));
    this.unwatchJump = onJumpChange((shown) => (this.showJump = shown));
    // Turns loaded finished are parsed as Markdown once they come near the viewport (a long
    // transcript shows at once; until then a turn is its text in paragraphs).
    this.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        const t = this.items.find((t) => t.key === entry.target.dataset.key);
        if (t) t.lazy = false;
        this.observer.unobserve(entry.target);
      }
    }, { rootMargin: "1500px 0px" });
    for (const el of this.$el.querySelectorAll(".rostrum-turn-lazy")) this.observer.observe(el);
    startFollowing(this.follow);
  },
  unmounted() {
    this.unsubscribe?.();
    this.unwatchJump?.();
    this.observer?.disconnect();
    clearTimeout(this.resyncLater);
  },
  methods: {
    load() {
      // Turns finished before the page loaded are laid out only when scrolled near (long transcripts).
      this.items = (this.turns || []).map((t) => ({ cuts: [], notes: [], meta: "", lazy: t.state === "final", ...t }));
    },
    find(kid) {
      return this.items.find((t) => t.kid === kid);
    },
    person(t) {
      return this.people?.[t.speaker] || { name: t.speaker, color: "#94a3b8", model: "" };
    },
    render(text, keep) {
      return markdown(text, keep);
    },
    body(t) {
      if (t.lazy) return plainText(t.text);
      return markdown(t.text, t.state === "final");
    },
    cutNote(cut, t) {
      const why = cut.reason === "cancelled" ? "by a pause or stop" : `(${cut.reason})`;
      if (t.state === "final" || (t.state === "live" && t.attempt > cut.attempt)) return `Cut off ${why} — redone below.`;
      if (this.over) return `Cut off ${why} — the debate ended here.`;
      return `Cut off ${why} — will be redone.`;
    },
    resync() {
      // At most one a second; one asked for meanwhile is sent when the second is over, not dropped.
      const wait = this.lastResync + 1000 - Date.now();
      if (wait > 0) {
        this.resyncLater ??= setTimeout(() => { this.resyncLater = null; this.resync(); }, wait);
        return;
      }
      this.lastResync = Date.now();
      this.$emit("resync");
    },
    jump() {
      jumpToLive();
    },
    place(t, n) {
      // Finished turns stand in log order: a turn committed while the live bus was down can be heard of
      // after the next turn has started. It goes before the first turn later in the log or unfinished.
      t.n = n;
      const from = this.items.indexOf(t);
      this.items.splice(from, 1);
      const to = this.items.findIndex((o) => o.state !== "final" || o.n === undefined || o.n > n);
      this.items.splice(to === -1 ? this.items.length : to, 0, t);
    },
    apply(items) {
      for (const item of items) {
        const [type, kid] = item;
        if (type === 0) {
          const t = this.find(kid);
          if (!t || t.state !== "live") continue;
          const [, , offset, text] = item;
          const have = t.text.length;
          if (offset > have) this.resync(); // missed text: the server sends the whole turn again
          else if (offset + text.length > have) t.text += text.slice(have - offset);
        } else if (type === 1) {
          const [, , attempt, info] = item;
          let t = this.find(kid);
          // A start of the attempt shown live is a restart too (a worker that took the debate over redoes
          // the turn under the same attempt number; a resync re-sends it): its text follows from offset 0.
          if (t && t.state === "final") continue;
          if (!t) {
            t = { kid, cuts: [], notes: [], meta: "", ...info };
            this.items.push(t);
          }
          Object.assign(t, { state: "live", attempt, text: "" });
        } else if (type === 2) {
          const t = this.find(kid);
          if (!t || t.state !== "live") continue;
          if (t.text) t.cuts.push({ text: t.text, reason: item[2], attempt: t.attempt });
          Object.assign(t, { state: "cut", text: "" });
        } else if (type === 3) {
          const info = item[2] || {};
          let t = this.find(kid);
          if (!t) {
            t = { kid, cuts: [], notes: [], text: "", ...info };
            this.items.push(t);
            // The short form of a commit (no speaker, no text) assumes this page saw the turn start and
            // stream; one that did not (it joined in between) asks for the whole turn.
            if (info.speaker === undefined) this.resync();
          }
          for (const field of ["speaker", "group", "act"]) if (info[field] !== undefined) t[field] = info[field];
          if (info.text !== undefined && info.text !== null) t.text = info.text;
          if (info.key) t.key = info.key; // a turn heard of live gets its key here (comments hang on it)
          Object.assign(t, { state: "final", meta: info.meta || "", notes: info.notes || [] });
          if (info.n !== undefined) this.place(t, info.n);
        } else if (type === 4) {
          if (item[1] && "ended" in item[1]) this.over = !!item[1].ended;
        } else if (type === 5) {
          const t = this.find(kid);
          if (t) t.notes.push(item[2]);
        }
      }
      this.$nextTick(grew);
    },
  },
};
