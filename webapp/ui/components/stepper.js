// The phase stepper. The phases and how each condition looks come once (props); each pill's condition
// and the round text change while the debate runs and come with the live stream's status items
// ("steps", "steps_round"), serialised once for every spectator.
import { subscribe } from "rostrum-live";

const GAVEL = ["done", "current", "todo", "not-reached"];

export default {
  template: `
    <div class="rostrum-stepper" role="list" aria-label="Phases of this debate">
      <template v-for="(p, i) in phases" :key="p[0]">
        <span v-if="i" class="rostrum-chevron" aria-hidden="true">›</span>
        <span role="listitem" :class="['rostrum-phase-pill', 'rostrum-pill-' + cond(i)]" :title="look(i)[1]"
              :data-state="cond(i)" :data-phase="p[0]">
          <i v-if="icon(i)" class="material-icons rostrum-pill-icon" aria-hidden="true">{{ icon(i) }}</i>{{ p[1] }}<span
            class="sr-only"> ({{ look(i)[1] }})</span>
        </span>
      </template>
      <span v-if="roundText" class="rostrum-stepper-round">{{ roundText }}</span>
    </div>`,
  props: { phases: Array, looks: Object, steps: Array, round: String },
  data() {
    return { current: this.steps, roundText: this.round };
  },
  watch: {
    steps(value) { this.current = value; },
    round(value) { this.roundText = value; },
  },
  mounted() {
    this.unsubscribe = subscribe((items) => {
      for (const item of items) {
        if (item[0] !== 4) continue;
        if ("steps" in item[1]) this.current = item[1].steps;
        if ("steps_round" in item[1]) this.roundText = item[1].steps_round;
      }
    });
  },
  unmounted() {
    this.unsubscribe?.();
  },
  methods: {
    cond(i) { return this.current?.[i] || "todo"; },
    look(i) { return this.looks[this.cond(i)] || ["", ""]; },
    icon(i) { return this.phases[i][0] === "verdict" && GAVEL.includes(this.cond(i)) ? "gavel" : this.look(i)[0]; },
  },
};
