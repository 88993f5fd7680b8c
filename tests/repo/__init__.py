"""The repository itself: paths named in docs and comments exist, README's examples run, the layout rules, the
operator checklist."""
