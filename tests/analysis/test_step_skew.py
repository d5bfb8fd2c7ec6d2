"""Step-time skew: the spread between the slowest and fastest rank per step, p50 and p99."""
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
import step_skew  # noqa: E402


class StepSkew(unittest.TestCase):
    def test_spread_percentiles_from_known_steps(self):
        rng = np.random.default_rng(3)
        ranks, steps = 4, 200
        phases = rng.uniform(1e5, 2e5, size=(ranks, steps, 5))  # ns
        phases[2, 10, 1] += 5e6  # one straggling step: rank 2 is 5 ms late once
        s = step_skew.step_skew(phases)
        totals = phases.sum(axis=2) / 1e6
        spread = totals.max(axis=0) - totals.min(axis=0)
        self.assertEqual(s["ranks"], 4)
        self.assertEqual(s["steps"], 200)
        self.assertAlmostEqual(s["spread_ms_p50"], np.percentile(spread, 50))
        self.assertAlmostEqual(s["spread_ms_p99"], np.percentile(spread, 99))
        self.assertGreater(s["spread_ms_p99"], s["spread_ms_p50"])
        self.assertGreater(spread.max(), 4.5)  # the late step dominates its spread (minus other ranks noise)

    def test_one_rank_has_no_skew(self):
        self.assertIsNone(step_skew.step_skew(np.ones((1, 10, 5))))
        self.assertIsNone(step_skew.step_skew(np.ones((3, 0, 5))))

    def test_markdown_has_a_row_per_run(self):
        s = step_skew.step_skew(np.arange(2 * 3 * 5).reshape(2, 3, 5) * 1e6)
        text = step_skew.skew_markdown([("a", s), ("b", s)])
        self.assertEqual(len(text.strip().splitlines()), 4)
        self.assertIn("| a | 2 | 3 |", text)


if __name__ == "__main__":
    unittest.main()
