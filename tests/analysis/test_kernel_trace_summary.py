"""bench/kernel_trace_summary.py: time per kernel, steps, busy and idle time, and the window of a kernel trace."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "kernel_trace_summary.py")
HEADER = "start_ns,end_ns,stream,graph,kind,name\n"


def run(csv_text, *args):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write(HEADER + csv_text)
        window = os.path.join(d, "window.csv")
        done = subprocess.run([sys.executable, SCRIPT, path, "--window-csv", window, *args],
                              capture_output=True, text=True)
        written = None
        if os.path.exists(window):
            with open(window, encoding="utf-8") as f:
                written = f.read()
    return done, written


def steps_of(pattern, count, step_ns):
    """count steps of (offset_ns, duration_ns, stream, name) records, step_ns apart."""
    lines = []
    for i in range(count):
        for offset, duration, stream, name in pattern:
            start = i * step_ns + offset
            lines.append(f"{start},{start + duration},{stream},1,kernel,{name}\n")
    return "".join(lines)


class KernelTraceSummary(unittest.TestCase):
    def test_per_step_times_busy_and_idle(self):
        # 10 steps of 10 us: conv 4 us, then bn 2 us beside wgrad 3 us on another stream; 3 us idle a step.
        trace = steps_of([(0, 4000, 7, "conv"), (4000, 2000, 7, "bn"), (4000, 3000, 8, "wgrad")], 10, 10_000)
        done, _ = run(trace, "--last-ms", "1")
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        self.assertIn("10 steps", lines[0])
        rows = {line.split()[-1]: [float(x.rstrip("%")) for x in line.split()[:4]] for line in lines[2:-1]}
        self.assertEqual(rows["conv"], [4.0, 1.0, 4.0, 44.4])
        self.assertEqual(rows["wgrad"], [3.0, 1.0, 3.0, 33.3])
        self.assertEqual(rows["bn"], [2.0, 1.0, 2.0, 22.2])
        # The last step ends at 97 us: the window's wall is 97 us over 10 steps.
        self.assertIn("wall 9.70 us a step; GPU busy 7.00 us", lines[-1])
        self.assertIn("kernel time summed 9.00 us", lines[-1])
        self.assertIn("streams [7, 8]", lines[-1])

    def test_driver_calls_are_listed_apart_from_the_gpu_time(self):
        # 4 steps of a 4 us kernel; a loader thread (1234) frees memory for 3 us in two of them, and two threads
        # each wait 1 us a step.
        trace = steps_of([(0, 4000, 7, "conv")], 4, 10_000)
        trace += "".join(f"{i * 10_000 + 5000},{i * 10_000 + 8000},1234,0,api,cuMemFree_v2\n" for i in (1, 2))
        trace += "".join(f"{i * 10_000 + 100},{i * 10_000 + 1100},{t},0,api,cuEventSynchronize\n"
                         for i in range(4) for t in (1234, 99))
        done, _ = run(trace, "--last-ms", "1")
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        self.assertIn("4 steps", lines[0])
        self.assertIn("GPU busy 4.00 us", lines[-1])
        self.assertIn("kernel time summed 4.00 us", lines[-1])
        calls = {line.split()[-1]: line.split()[:4] for line in lines if line.split()[-1].startswith("cu")}
        self.assertEqual(calls["cuMemFree_v2"], ["1.50", "0.50", "3.00", "1"])
        self.assertEqual(calls["cuEventSynchronize"], ["2.00", "2.00", "1.00", "2"])

    def test_groups_sum_every_kernel_by_kind_of_work(self):
        # A step: a cuDNN convolution 5 us, two batch-norm passes 2 + 1 us, a memset 1 us, an unknown kernel 1 us.
        trace = steps_of([(0, 5000, 7, "sm90_xmma_fprop_implicit_gemm_f16"),
                          (5000, 2000, 7, "void sb::kernels::(anonymous namespace)::apply_nhwc_kernel<__half>(int)"),
                          (7000, 1000, 7, "void sb::kernels::(anonymous namespace)::stats_nhwc_kernel<__half>(int)"),
                          (8000, 1000, 7, "sb::kernels::(anonymous namespace)::memset_node_kernel(void*)"),
                          (9000, 1000, 7, "mystery")], 4, 10_000)
        done, _ = run(trace, "--groups", "--top", "1")
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        start = lines.index("by kind of work, per step (us):")
        self.assertEqual(start, 3, "after the one --top line")
        rows = [line.split(None, 2) for line in lines[start + 2:-1]]
        groups = {group: [float(total), float(share.rstrip("%"))] for total, share, group in rows}
        self.assertEqual(groups, {"convolutions and matrix products": [5.0, 50.0], "batch norm": [3.0, 30.0],
                                  "memsets, copies and timestamps": [1.0, 10.0], "other": [1.0, 10.0]})
        self.assertEqual(list(groups)[:2], ["convolutions and matrix products", "batch norm"], "largest first")
        self.assertTrue(lines[-1].startswith("wall 10.00 us a step"), lines[-1])
        done, _ = run(trace)
        self.assertNotIn("by kind of work", done.stdout)

    def test_graphs_count_the_steps_and_their_waits_beside_other_work(self):
        # 4 steps of 10 us in graph 1: conv 0-4 us, bn 6-9 us. Outside any graph: a decode kernel at 3-5 us of
        # each step, 1 us of it in the graphs' wait, and three kernels twice a step (the most common count) while
        # conv or bn runs.
        trace = steps_of([(0, 4000, 7, "conv"), (6000, 3000, 7, "bn")], 4, 10_000)
        trace += "".join(f"{i * 10_000 + 3000},{i * 10_000 + 5000},9,0,kernel,decode\n" for i in range(4))
        trace += "".join(f"{i * 5_000 + 1000},{i * 5_000 + 1100},9,0,kernel,{name}\n"
                         for i in range(8) for name in ("a", "b", "c"))
        done, _ = run(trace, "--last-ms", "1")
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        self.assertIn("4 steps", lines[0])
        # Waits: 2 us in each step and 1 us between steps (3 of them), over 4 steps.
        graph_line = [line for line in lines if line.startswith("graphs:")]
        self.assertEqual(graph_line, ["graphs: their kernels busy 7.00 us a step; between them 2.75 us, "
                                      "1.00 of it while work outside the graphs ran"])
        done, _ = run(steps_of([(0, 4000, 7, "conv")], 4, 10_000), "--last-ms", "1")
        self.assertNotIn("graphs:", done.stdout, "nothing beside the graphs")

    def test_window_skips_the_end_and_is_written(self):
        trace = steps_of([(0, 1000, 7, "step")], 20, 2000) + "100000,190000,7,0,kernel,evaluation\n"
        done, written = run(trace, "--last-ms", "0.02", "--skip-ms", "0.15")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertNotIn("evaluation", done.stdout)
        self.assertNotIn("evaluation", written)
        self.assertEqual(written.splitlines()[0], HEADER.strip())
        self.assertGreaterEqual(len(written.splitlines()) - 1, 9)

    def test_explicit_steps_and_memcpy_labels(self):
        trace = "0,1000,7,0,memcpy,32 bytes\n2000,4000,7,0,kernel,k\n"
        done, _ = run(trace, "--steps", "2")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("[memcpy] 32 bytes", done.stdout)
        self.assertIn("2 steps", done.stdout)
        self.assertIn("wall 2.00 us a step", done.stdout)

    def test_bad_input_is_named(self):
        done, _ = run("")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("holds no records", done.stderr)
        done, _ = run("0,1000,7,0,kernel,k\n", "--skip-ms", "5")
        self.assertIn("no record in the window", done.stderr)
        done, _ = run("0,1000,7,0,kernel,k\n", "--last-ms", "0")
        self.assertIn("--last-ms", done.stderr)


if __name__ == "__main__":
    unittest.main()
