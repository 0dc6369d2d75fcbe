"""The ``ifeval`` kind: IFEval's verifiable instructions, checked by lm-eval's own code.

``kind`` (the grader: its settings, the label read as IFEval stores it, lm-eval's four check
modules loaded without the rest of lm-eval) → ``punkt`` (NLTK's English Punkt model from the
extra's tables, for the two sentence-splitting checks) → ``preload`` (what a worker process
imports when it starts, so that loading the checks never comes out of a call's deadline).
"""
