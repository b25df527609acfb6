"""The counters the layout tests hold to budgets: visible code, main-path
words, validation share."""
