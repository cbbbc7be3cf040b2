"""The book's solutions, run as the chapters' solution cells run them: inside ``the_books_solution()``.

Anywhere else a checker refuses a function that runs a solution (tests/test_exercises_off_limits.py).
"""
import functools

from revformer.exercises import the_books_solution


def as_the_books(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with the_books_solution():
            return fn(*args, **kwargs)
    return run
