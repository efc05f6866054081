"""The debate engine: state machine, formats, prompts, budget, judge and the runner that drives them."""
