"""One module per model family: its markers, parser rows, render-side rules, structural-tag grammar
and names, declared once. See ``tokenbridge.parsers`` for the map and the checklist."""
