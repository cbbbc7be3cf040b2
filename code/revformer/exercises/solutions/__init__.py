"""Solutions of the chapters' exercises: one module per chapter (``ch04``), one function per
exercise, named as the reader's.

A chapter shows its solution collapsed (``revformer.exercises.show_solution``)
and checks it with the same checker the reader runs, so a solution on the page
always passes.
"""
