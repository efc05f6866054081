// The participants panel as one element: who debates (colour, name, position, model, notes, persona: folded
// when long) and who judges.
export default {
  template: `
    <div class="rostrum-participants">
      <h2 class="rostrum-card-title">Participants</h2>
      <div v-for="p in people" :key="p.id" class="rostrum-person">
        <span class="rostrum-dot" :style="{background: p.color}"></span>
        <div class="rostrum-person-text">
          <div><span class="rostrum-person-name">{{ p.name }}</span> <small>({{ p.position }})</small></div>
          <div v-if="p.model" class="rostrum-person-model">{{ p.model }}</div>
          <div v-for="(n, i) in p.notes" :key="i" class="rostrum-person-note">{{ n }}</div>
          <div v-if="p.persona && p.persona.length <= foldAt" class="rostrum-person-persona">
            <span class="rostrum-person-note">Persona:</span> {{ p.persona }}</div>
          <details v-else-if="p.persona" class="rostrum-person-persona">
            <summary>Persona: {{ p.persona.slice(0, 60).trimEnd() }}…</summary>
            <div class="rostrum-persona-text">{{ p.persona }}</div>
          </details>
        </div>
      </div>
      <template v-if="judges">
        <hr class="rostrum-rule">
        <div class="rostrum-person">
          <i class="material-icons rostrum-judge-icon" aria-hidden="true">gavel</i>
          <div class="rostrum-person-text">
            <div class="rostrum-person-name">Judge</div>
            <div class="rostrum-person-model">{{ judges }}</div>
          </div>
        </div>
      </template>
    </div>`,
  props: { people: Array, judges: String, foldAt: { type: Number, default: 140 } },
};
