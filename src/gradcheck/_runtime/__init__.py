"""What wraps the differences while a check runs (rank 4, beside the entry-wise generator).

``checkpoint`` saves finished differences as they come and resumes from them (a
``Checkpoint`` file per check); ``progress`` draws the progress line and says when
``gradcheck.screen`` would have been faster.
In: an engine's ``differences`` callable. Out: the same callable, saved or reported.
Must not import: the stages after the differences (classify, refine, adjudicate, report,
pipeline), nor any feature.
"""
