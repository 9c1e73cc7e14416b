"""reflint's rules: one module per rule, named for what it catches (installed as reflint.rules)."""
