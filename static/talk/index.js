// Comments and reactions under each finished turn (the browser side of webapp/ui/components/turn_talk.py).
//
// One `talk` store per page, shared by the transcript's turns: what people said about each turn (the
// server's snapshot, then socket.io "rt" events sent once per debate to every spectator's page), this
// person's own reactions, and what they may do. A turn's <turn-talk> reads it; actions go to the page's
// hub element, which sends them to the server (checked there by the gate). Comments are plain text:
// shown with Vue's text interpolation (escaped), never as Markdown or HTML.
import { reactive } from "vue";

export const REACTIONS = ["👍", "❓", "⚠️"];
export const MAX_CHARS = 500;
const NAMES = { "👍": "Agree", "❓": "Question", "⚠️": "Doubtful" }; // what a screen reader says for each

export const talk = reactive({ debate: "", turns: {}, mine: {}, can: {}, errors: {}, busy: {}, hub: null });
let listening = false;

function listen() {
  if (listening) return true;
  if (!window.socket) return false;
  window.socket.on("rt", (payload) => {
    if (payload && payload.d === talk.debate) talk.turns = payload.turns || {};
  });
  listening = true;
  return true;
}

export function startTalk() {
  const tryListen = () => listen() || setTimeout(tryListen, 50);
  tryListen();
}

export const TurnTalk = {
  props: { tkey: String },
  template: `
    <section class="rostrum-talk" :data-turn="tkey" aria-label="Reactions and comments">
      <div class="rostrum-reactions">
        <button v-for="e in reactions" :key="e" type="button" class="rostrum-reaction"
                :class="{'rostrum-reaction-mine': mine.includes(e)}" :aria-pressed="mine.includes(e) ? 'true' : 'false'"
                :disabled="!can.react" :data-emoji="e" :aria-label="names[e] + ': ' + count(e)" @click="react(e)">
          <span aria-hidden="true">{{ e }}</span> <span class="rostrum-reaction-count">{{ count(e) }}</span>
        </button>
        <button v-if="can.comment" type="button" class="rostrum-talk-open" @click="open = !open"
                :aria-expanded="open ? 'true' : 'false'">Comment</button>
      </div>
      <ul v-if="comments.length" class="rostrum-comments">
        <li v-for="c in comments" :key="c.id" class="rostrum-comment" :data-id="c.id">
          <span class="rostrum-comment-author">{{ c.author }}</span>
          <span class="rostrum-comment-text">{{ c.text }}</span>
          <button v-if="can.moderate" type="button" class="rostrum-comment-delete"
                  :aria-label="'Delete comment by ' + c.author" @click="remove(c)">Delete</button>
        </li>
      </ul>
      <form v-if="can.comment && open" class="rostrum-composer" @submit.prevent="send">
        <textarea v-model="draft" rows="2" class="rostrum-composer-text" aria-label="Your comment"
                  placeholder="Plain text, at most 500 characters"></textarea>
        <div class="rostrum-composer-row">
          <span class="rostrum-composer-count" :class="{'rostrum-over': draft.length > max}">{{ draft.length }}/{{ max }}</span>
          <button type="submit" class="rostrum-composer-send" :disabled="busy">Send</button>
        </div>
      </form>
      <p v-if="error" class="rostrum-composer-error" role="alert">{{ error }}</p>
    </section>`,
  data() {
    return { draft: "", open: false, reactions: REACTIONS, names: NAMES, max: MAX_CHARS };
  },
  computed: {
    can() { return talk.can; },
    entry() { return talk.turns[this.tkey] || {}; },
    comments() { return this.entry.comments || []; },
    mine() { return talk.mine[this.tkey] || []; },
    error() { return talk.errors[this.tkey] || ""; },
    busy() { return !!talk.busy[this.tkey]; },
  },
  watch: {
    busy(now, before) { if (before && !now && !this.error) this.draft = ""; },
  },
  methods: {
    count(e) { return (this.entry.reactions || {})[e] || 0; },
    react(e) { talk.hub?.send("react", { turn: this.tkey, emoji: e }); },
    send() {
      talk.errors[this.tkey] = "";
      talk.busy[this.tkey] = true;
      talk.hub?.send("comment", { turn: this.tkey, text: this.draft });
    },
    remove(c) { talk.hub?.send("delete", { turn: this.tkey, id: c.id }); },
  },
};
