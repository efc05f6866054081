// The phase stepper: one element whose props the server replaces when what it shows changes.
// pills: [phase id, title, condition, words, icon]; a pill's look is the CSS class rostrum-pill-<condition>.
export default {
  template: `
    <div class="rostrum-stepper" role="list" aria-label="Phases of this debate">
      <template v-for="(p, i) in pills" :key="p[0]">
        <span v-if="i" class="rostrum-chevron" aria-hidden="true">›</span>
        <span role="listitem" :class="['rostrum-phase-pill', 'rostrum-pill-' + p[2]]" :title="p[3]"
              :data-state="p[2]" :data-phase="p[0]">
          <i v-if="p[4]" class="material-icons rostrum-pill-icon" aria-hidden="true">{{ p[4] }}</i>{{ p[1] }}<span
            class="sr-only"> ({{ p[3] }})</span>
        </span>
      </template>
      <span v-if="round" class="rostrum-stepper-round">{{ round }}</span>
    </div>`,
  props: { pills: Array, round: String },
};
