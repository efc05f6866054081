"""Who may do what: roles, the principal behind a request, passwords, sign-in throttling, and the
command gate every state-changing action passes through."""
