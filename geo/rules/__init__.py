"""The contract's rules, each defined once: time and calendar, works, transit, air thresholds and trend, and
the per-snapshot data the rules are evaluated on (``prepared``). See README.md in this folder."""
