"""The plots: the expected axes and lines (through matplotlib's objects), and non-empty PNG/SVG files."""
import os
import struct
import unittest

import fixtures
from fixtures import epoch
from report_test_util import TempDirTest, run_report

import matplotlib.image  # noqa: E402
import plots  # noqa: E402
from scalebench_results import load_result  # noqa: E402
from scaling_series import all_runs, series_from_runs, series_from_study, throughput_by_batch  # noqa: E402


def png_size(path):
    """(width, height) from the PNG signature and IHDR chunk."""
    with open(path, "rb") as handle:
        head = handle.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise AssertionError(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


def labelled_lines(ax):
    """The lines a legend names (error bar caps and axis marks are unnamed: "_..." labels)."""
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def labels(ax):
    return [line.get_label() for line in labelled_lines(ax)]


class FigureObjectsTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.speedups = fixtures.amdahl_study(self.path("study.h5"), serial_fraction=0.05)
        self.study = load_result(self.path("study.h5"))
        [self.series] = series_from_study(self.study, settle_epochs=1)

    def test_speedup_plot(self):
        ax = plots.speedup_figure([self.series]).axes[0]
        self.assertEqual(ax.get_xlabel(), "GPUs")
        self.assertEqual(ax.get_ylabel(), "speedup")
        self.assertEqual(len(labelled_lines(ax)), 3)  # ideal, measured, Amdahl fit
        ideal = next(line for line in ax.get_lines() if line.get_label() == plots.IDEAL_LABEL)
        self.assertEqual(list(ideal.get_xdata()), [1, 2, 4, 8])
        self.assertEqual(list(ideal.get_ydata()), [1, 2, 4, 8])
        measured = next(line for line in ax.get_lines() if line.get_label() == "study")
        self.assertEqual(list(measured.get_xdata()), [1, 2, 4, 8])
        for n, y in zip(measured.get_xdata(), measured.get_ydata()):
            self.assertAlmostEqual(y, self.speedups[n])
        self.assertTrue(any(label.startswith("study: Amdahl s=0.050") for label in labels(ax)))
        self.assertEqual([t.get_text() for t in ax.get_legend().get_texts()], labels(ax))
        self.assertEqual(list(ax.get_xticks()), [1, 2, 4, 8])

    def test_efficiency_plot(self):
        ax = plots.efficiency_figure([self.series]).axes[0]
        self.assertEqual((ax.get_xlabel(), ax.get_ylabel()), ("GPUs", "efficiency"))
        ideal = next(line for line in ax.get_lines() if line.get_label() == plots.IDEAL_LABEL)
        self.assertEqual(list(ideal.get_ydata()), [1, 1])
        measured = next(line for line in ax.get_lines() if line.get_label() == "study")
        for n, y in zip(measured.get_xdata(), measured.get_ydata()):
            self.assertAlmostEqual(y, self.speedups[n] / n)
        # The axis zooms to the data (efficiency 0.74 to 1) and says that it does not start at 0.
        bottom = ax.get_ylim()[0]
        self.assertGreater(bottom, 0.5)
        self.assertLess(bottom, min(self.speedups[n] / n for n in self.speedups))
        self.assertIn(plots.ZOOM_NOTE.format(bottom), [text.get_text() for text in ax.texts])

    def test_efficiency_axis_starts_at_zero_when_the_data_reach_it(self):
        self.series.points[-1].efficiency = 0.01
        self.series.points[-1].efficiency_spread = None
        ax = plots.efficiency_figure([self.series]).axes[0]
        self.assertEqual(ax.get_ylim()[0], 0)
        self.assertEqual(len(ax.texts), 0)

    def test_error_bars_span_the_spread(self):
        ax = plots.speedup_figure([self.series], with_fits=False).axes[0]
        # The fixture's steady epochs are equal, so each bar is a point; widen one and look again.
        point = self.series.points[1]
        point.speedup_spread = point.speedup_spread.__class__(point.speedup, point.speedup - 0.25, point.speedup + 0.5,
                                                              point.speedup, point.speedup, 2)
        ax = plots.speedup_figure([self.series], with_fits=False).axes[0]
        bars = [c for c in ax.collections if c.get_segments()]
        segment = bars[0].get_segments()[1]  # x = 2 GPUs: from low to high
        self.assertAlmostEqual(segment[0][1], point.speedup - 0.25)
        self.assertAlmostEqual(segment[1][1], point.speedup + 0.5)

    def test_phase_breakdown(self):
        fig = plots.phase_figure([self.series])
        ax = fig.axes[0]
        self.assertEqual((ax.get_xlabel(), ax.get_ylabel()), ("GPUs", "time per epoch (s)"))
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()], ["1", "2", "4", "8"])
        self.assertEqual([c.get_label() for c in ax.containers],
                         ["data", "forward", "backward", "backward beside comm", "comm (exposed)", "optimizer"])
        # Stacked: each segment starts where the one below ends; at 1 GPU (60 s epochs) forward is 30 %.
        forward = ax.containers[1].patches[0]
        self.assertAlmostEqual(forward.get_y(), 0.1 * 60.0)
        self.assertAlmostEqual(forward.get_height(), 0.3 * 60.0)
        self.assertIn("epoch time", labels(ax))

    def test_one_panel_per_series(self):
        runs = [fixtures.write_run(self.path(f"np{n}.h5"), n, [epoch(1, 1.0, 100.0 * n)]) for n in (1, 2)]
        run_series = series_from_runs([load_result(p) for p in runs], 1, lambda message: None)
        fig = plots.phase_figure([self.series] + run_series)
        self.assertEqual(len([ax for ax in fig.axes if ax.get_visible()]), 2)

    def test_curves(self):
        fig = plots.curves_figure(all_runs([self.study]))
        loss, accuracy = fig.axes
        self.assertEqual((loss.get_xlabel(), loss.get_ylabel()), ("epoch", "loss"))
        self.assertEqual((accuracy.get_xlabel(), accuracy.get_ylabel()), ("epoch", "test accuracy"))
        self.assertEqual(len(loss.get_lines()), 8)  # train and test for 4 configurations
        self.assertEqual(len(accuracy.get_lines()), 4)
        self.assertIn("study, 1 GPU train", labels(loss))
        self.assertEqual(list(accuracy.get_lines()[0].get_ydata()), [0.6, 0.7, 0.8])

    def test_throughput_against_batch_size(self):
        files = [fixtures.write_run(self.path(f"bs{b}.h5"), 2, [epoch(1, 1.0, 5.0 * b)], cfg=fixtures.config(batch_size=b))
                 for b in (16, 64, 256)]
        groups = throughput_by_batch([load_result(p) for p in files], 1)
        self.assertEqual(len(groups), 1)
        ax = plots.throughput_batch_figure(groups).axes[0]
        self.assertEqual((ax.get_xlabel(), ax.get_ylabel()), ("batch size per GPU", "images/s"))
        line = labelled_lines(ax)[0]
        self.assertEqual(list(line.get_xdata()), [16, 64, 256])
        self.assertEqual(list(line.get_ydata()), [80.0, 320.0, 1280.0])


class ImageFilesTest(TempDirTest):
    def test_report_writes_non_empty_images(self):
        fixtures.amdahl_study(self.path("study.h5"))
        self.assert_ok(run_report(self.path("study.h5"), "--out", self.path("out")))
        for name in ("speedup", "efficiency", "phases", "curves"):
            png = self.path("out", f"{name}.png")
            width, height = png_size(png)
            self.assertGreaterEqual(width, 600, name)
            self.assertGreaterEqual(height, 400, name)
            pixels = matplotlib.image.imread(png)
            self.assertGreater(float(pixels[..., :3].std()), 0.01, f"{name}.png is blank")
            with open(self.path("out", f"{name}.svg"), encoding="utf-8") as handle:
                svg = handle.read()
            self.assertIn("<svg", svg)
            self.assertIn("GPUs" if name != "curves" else "epoch", svg)
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            text = handle.read()
        for name in ("speedup", "efficiency", "phases", "curves"):
            self.assertIn(f"({name}.png)", text)

    def test_svg_is_reproducible(self):
        fixtures.amdahl_study(self.path("study.h5"))
        for out in ("a", "b"):
            self.assert_ok(run_report(self.path("study.h5"), "--out", self.path(out)))
        for name in ("speedup.svg", "phases.svg"):
            with open(self.path("a", name), "rb") as a, open(self.path("b", name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)

    def test_single_run_has_no_scaling_plots(self):
        path = fixtures.write_run(self.path("one.h5"), 2, [epoch(1, 1.0, 100.0), epoch(2, 1.0, 100.0)])
        self.assert_ok(run_report(path, "--out", self.path("out")))
        self.assertFalse(os.path.exists(self.path("out", "speedup.png")))
        self.assertGreater(os.path.getsize(self.path("out", "curves.png")), 0)


if __name__ == "__main__":
    unittest.main()
