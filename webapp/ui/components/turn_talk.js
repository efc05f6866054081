// The page's link between the turns' comment boxes (static/talk/index.js) and the server: holds the
// snapshot and this person's rights, forwards actions as events, and takes the answers back.
import { talk, startTalk } from "rostrum-talk";

export default {
  template: `<span class="rostrum-talk-hub" hidden></span>`,
  props: { debate: String, turns: Object, mine: Object, can: Object },
  created() {
    Object.assign(talk, { debate: this.debate, turns: this.turns || {}, mine: this.mine || {}, can: this.can || {} });
    talk.hub = this;
    startTalk();
  },
  unmounted() {
    if (talk.hub === this) talk.hub = null;
  },
  methods: {
    send(kind, args) {
      this.$emit(kind, args);
    },
    answer(result) {
      const turn = result.turn;
      if ("mine" in result) talk.mine[turn] = result.mine;
      talk.errors[turn] = result.error || "";
      talk.busy[turn] = false;
    },
    replace(turns) {
      talk.turns = turns || {};
    },
  },
};
