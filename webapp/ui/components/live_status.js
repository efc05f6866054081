// The live summary of a debate, from the server's snapshot (`status` prop) and then the live stream's
// status items: mode "bar" is the compact sticky line under the stepper (who is speaking, cost), mode
// "cost" the cost card (total, limit, per model). Only the bar's hidden `announce` line is a live region:
// screen readers hear each turn and phase change, not the cost that moves with every token.
import { subscribe } from "rostrum-live";

export default {
  template: `
    <div v-if="mode === 'bar'" class="rostrum-livebar">
      <span class="rostrum-sr-only" role="status" aria-live="polite" aria-atomic="true" data-testid="announce">{{ s.announce }}</span>
      <span v-for="(p, i) in s.speaking" :key="i" class="rostrum-livebar-speaker">
        <span v-if="p[1]" class="rostrum-dot" :style="{background: p[1]}"></span>{{ p[0] }} <em>{{ p[2] }}</em>
      </span>
      <span v-if="!s.speaking.length && !s.ended" class="rostrum-livebar-state">{{ s.state }}</span>
      <span class="rostrum-livebar-cost" :class="{'rostrum-warned': s.warned}" title="Spent so far">{{ s.cost }}</span>
    </div>
    <div v-else class="rostrum-cost">
      <h2 class="rostrum-card-title">Cost</h2>
      <div class="rostrum-cost-total"><span data-testid="cost-total">{{ s.cost }}</span>
        <small v-if="s.simulated">simulated demo prices</small></div>
      <div v-if="s.unpriced" class="rostrum-cost-unpriced">unpriced: {{ s.unpriced }}</div>
      <div v-if="s.ratio !== null && s.ratio !== undefined" class="rostrum-cost-bar" role="progressbar"
           :aria-valuenow="Math.round(s.ratio * 100)" aria-valuemin="0" aria-valuemax="100" aria-label="Share of the cost limit spent">
        <span :style="{width: (s.ratio * 100) + '%'}" :class="{'rostrum-warned': s.warned}"></span></div>
      <div v-if="s.limit" class="rostrum-cost-limit">{{ s.limit }}</div>
      <div v-for="m in s.models" :key="m[0]" class="rostrum-cost-model"><span>{{ m[0] }}</span><span>{{ m[1] }}</span></div>
    </div>`,
  props: { status: Object, mode: String },
  data() {
    return { s: this.status };
  },
  watch: {
    status(value) { this.s = value; },
  },
  mounted() {
    this.unsubscribe = subscribe((items) => {
      for (const item of items) if (item[0] === 4) this.s = { ...this.s, ...item[1] }; // only what changed
    });
  },
  unmounted() {
    this.unsubscribe?.();
  },
};
