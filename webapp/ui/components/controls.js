// The command buttons of a debate page (Pause, Resume, Retry, Stop) as one element, with the page's
// other actions as its children (the default slot). Each button is [name, label, icon, colour];
// `enabled` says which may be pressed now. Stop opens a menu: with or without a verdict (closed as soon
// as Stop may no longer be pressed: the debate ended meanwhile). A press is one "command" event
// ({name, verdict}); the server's gate decides, whatever the browser shows.
export default {
  template: `
    <div v-if="buttons.length" class="row w-full items-center gap-2" role="group" aria-label="Debate controls">
      <q-btn v-for="b in buttons" :key="b[0]" no-caps dense :icon="b[2]" :label="b[1]" :data-control="b[0]"
             class="q-px-sm" :aria-label="b[1]"
             :unelevated="on(b[0])" :flat="!on(b[0])" :color="on(b[0]) ? b[3] : 'grey-6'" :disable="!on(b[0])"
             @click="b[0] === 'stop' ? null : send(b[0])">
        <q-menu v-if="b[0] === 'stop'" ref="stopMenu">
          <q-list role="menu" style="min-width: 14rem">
            <q-item clickable v-close-popup role="menuitem" @click="send('stop', true)">
              <q-item-section>Stop and judge what was said</q-item-section>
            </q-item>
            <q-item clickable v-close-popup role="menuitem" @click="send('stop', false)">
              <q-item-section>Stop without a verdict</q-item-section>
            </q-item>
          </q-list>
        </q-menu>
      </q-btn>
      <slot></slot>
    </div>`,
  props: { buttons: Array, enabled: Object },
  watch: {
    enabled(now) {
      if (!now?.stop) for (const menu of [].concat(this.$refs.stopMenu || [])) menu?.hide?.();
    },
  },
  methods: {
    on(name) { return !!this.enabled?.[name]; },
    send(name, verdict) {
      this.$emit("command", verdict === undefined ? { name } : { name, verdict });
    },
  },
};
