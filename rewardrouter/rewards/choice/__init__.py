"""The multiple-choice kinds, ``gpqa`` and ``multiple_choice``: which option did a response choose?

``kind`` (the graders: the last box, else the final statement, else a final sentence naming one
option's text; the label read as a letter, an index or an option's text) → ``statements`` (a
statement of a choice in the response's prose: leads, hedges, corrections, verdicts, lists and
negations, each pass linear or bounded). The words of each language live one level up, in
:mod:`rewardrouter.rewards.leads`, which ``math`` reads its stated answers with too.
"""
