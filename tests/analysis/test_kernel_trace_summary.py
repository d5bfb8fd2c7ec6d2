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
