"""Each reproduction at its tiny scale at most once per test session, shared by ``test_reproduce`` (every one) and
the files of the single reproductions (their own), so that no tiny run is done twice."""

from __future__ import annotations

import pytest

from archstudy.study.reproduce import reproduce


class TinyRuns:
    """``run(name)`` -> (the directory of NAME.json and NAME.html, the ``Result``), run on first use;
    ``figures[name]``: its page's (caption, Figure) pairs."""

    def __init__(self, out):
        self.out, self.results, self.figures = out, {}, {}

    def run(self, name: str):
        if name not in self.results:
            import torch

            from archstudy.study.reproduce import page

            threads = torch.get_num_threads()
            write_page = page.write_page

            def keep_figures(result, figures, path):  # the pages' figures, for the legibility test
                self.figures[result.name] = list(figures)
                return write_page(result, figures, path)

            # nlc-figure2 with seed 3, whose first draws include a net with a high output bias, so that every
            # claim has its nets
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(page, "write_page", keep_figures)
                self.results[name] = reproduce(
                    name, self.out, scale="tiny", seed=3 if name == "nlc-figure2" else 0, progress=None
                )[0]
            assert torch.get_num_threads() == threads  # one thread (the default) during each run only
        return self.out, self.results[name]


@pytest.fixture(scope="session")
def tiny_runs(tmp_path_factory) -> TinyRuns:
    return TinyRuns(tmp_path_factory.mktemp("reproductions"))
