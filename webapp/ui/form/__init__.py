"""The new-debate form (`/new`), one module per part of it, and the new-tournament form built from the
same parts (`tournament_form`).

`debate_form.DebateForm` holds the form's dictionary and builds the page from these parts, each of
which edits its share of the dictionary and re-renders the form through it: the format card
(`format_card`), the participants (`participants`), the judges' self-preference check (`families`),
the sticky cost-and-start bar (`cost_bar`), the error summary and focusing a field (`feedback`), the
checks made before a start (`validation`), and putting back the form a tab kept (`kept`). The judge
panel, the option groups, the fields' registry and the presets are shared components
(`ui/components/judge_panel.py`, `debate_options.py`, `form_fields.py`, `presets.py`).
"""
