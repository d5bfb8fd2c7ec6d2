"""Amdahl's serial fraction and the Karp-Flatt metric on synthetic speedups."""
import math
import unittest

import numpy as np

import fixtures  # noqa: F401  (puts analysis/ on sys.path)
from scaling_fits import amdahl_speedup, fit_amdahl, karp_flatt

GPUS = np.array([1, 2, 4, 8, 16, 32])


class AmdahlFitTest(unittest.TestCase):
    def test_recovers_a_known_serial_fraction(self):
        for s in (0.0, 0.01, 0.05, 0.3, 1.0):
            fit = fit_amdahl(GPUS, amdahl_speedup(GPUS, s))
            self.assertAlmostEqual(fit.serial_fraction, s, places=9, msg=f"s = {s}")
            self.assertLess(fit.rmse, 1e-8)
            self.assertEqual(fit.points, len(GPUS) - 1)  # the 1-GPU point carries no information

    def test_recovers_it_from_noisy_speedups(self):
        rng = np.random.default_rng(7)
        measured = amdahl_speedup(GPUS, 0.04) * (1.0 + 0.01 * rng.standard_normal(len(GPUS)))
        fit = fit_amdahl(GPUS, measured)
        self.assertAlmostEqual(fit.serial_fraction, 0.04, delta=0.004)
        self.assertGreater(fit.rmse, 0.0)

    def test_least_squares_in_speedup(self):
        # Two points; the fitted s must minimise the squared speedup error, checked against a fine scan.
        gpus, measured = [2, 8], [1.8, 5.0]
        fit = fit_amdahl(gpus, measured)
        scan = np.linspace(0, 1, 200001)
        sse = [(amdahl_speedup(2, s) - 1.8) ** 2 + (amdahl_speedup(8, s) - 5.0) ** 2 for s in scan]
        self.assertAlmostEqual(fit.serial_fraction, scan[int(np.argmin(sse))], places=5)

    def test_superlinear_scaling_clamps_to_zero(self):
        self.assertEqual(fit_amdahl([1, 2, 4], [1.0, 2.2, 4.6]).serial_fraction, 0.0)

    def test_baseline_other_than_one_gpu(self):
        gpus = np.array([2, 4, 8, 16])
        speedup = amdahl_speedup(gpus / 2, 0.1)  # measured relative to 2 GPUs
        self.assertAlmostEqual(fit_amdahl(gpus, speedup, baseline_gpus=2).serial_fraction, 0.1, places=9)

    def test_nothing_to_fit(self):
        self.assertIsNone(fit_amdahl([1], [1.0]))
        self.assertIsNone(fit_amdahl([1, 2], [1.0, math.nan]))

    def test_ignores_unmeasured_points(self):
        fit = fit_amdahl([1, 2, 4, 8], [1.0, math.nan, amdahl_speedup(4, 0.2), amdahl_speedup(8, 0.2)])
        self.assertAlmostEqual(fit.serial_fraction, 0.2, places=9)
        self.assertEqual(fit.points, 2)


class KarpFlattTest(unittest.TestCase):
    def test_hand_computed_values(self):
        e = karp_flatt([1, 2, 4, 8], [1.0, 1.9, 3.6, 6.0])
        self.assertTrue(math.isnan(e[0]))  # undefined at one GPU
        self.assertAlmostEqual(e[1], (1 / 1.9 - 1 / 2) / (1 - 1 / 2))  # 0.052632
        self.assertAlmostEqual(e[2], (1 / 3.6 - 1 / 4) / (1 - 1 / 4))  # 0.037037
        self.assertAlmostEqual(e[3], (1 / 6.0 - 1 / 8) / (1 - 1 / 8))  # 0.047619
        self.assertAlmostEqual(e[1], 0.0526315789, places=9)

    def test_equals_the_serial_fraction_on_amdahl_data(self):
        e = karp_flatt(GPUS, amdahl_speedup(GPUS, 0.07))
        np.testing.assert_allclose(e[1:], 0.07, rtol=1e-12)

    def test_linear_speedup_is_zero(self):
        np.testing.assert_allclose(karp_flatt(GPUS, GPUS)[1:], 0.0, atol=1e-15)

    def test_relative_to_the_baseline(self):
        e = karp_flatt([2, 4], [1.0, 1.8], baseline_gpus=2)
        self.assertTrue(math.isnan(e[0]))
        self.assertAlmostEqual(e[1], (1 / 1.8 - 1 / 2) / (1 - 1 / 2))


if __name__ == "__main__":
    unittest.main()
