#!/usr/bin/env python3
"""Checks a scalebench HDF5 results file written by a batch job (schema: docs/results_schema.md): it opens,
it records the job (the Slurm job id, the world size, the launcher), it is complete, and /epochs
holds at least one row. A `scale` file (--study) has no root /epochs: it needs one /study row per GPU
count, and /configs/gpus_<n>/epochs with at least one row each.
Exit code 0 when valid, 1 with the reasons otherwise."""
import argparse
import sys

import h5py


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("file")
    ap.add_argument("--job-id", default=None, help="expected root attribute slurm_job_id ('' outside Slurm)")
    ap.add_argument("--world-size", type=int, default=None)
    ap.add_argument("--launcher", default=None, help="expected root attribute launcher (slurm, openmpi)")
    ap.add_argument("--min-epochs", type=int, default=1)
    ap.add_argument("--study", action="store_true", help="also require the /study table of scalebench scale")
    args = ap.parse_args()

    problems = []
    try:
        f = h5py.File(args.file, "r")
    except OSError as e:
        print(f"{args.file}: not a readable HDF5 file: {e}")
        return 1
    with f:
        attrs = f.attrs
        if args.job_id is not None:
            got = text(attrs.get("slurm_job_id", "<missing>"))
            if got != args.job_id:
                problems.append(f"slurm_job_id is '{got}', expected '{args.job_id}'")
        if args.world_size is not None and int(attrs.get("world_size", -1)) != args.world_size:
            problems.append(f"world_size is {attrs.get('world_size')}, expected {args.world_size}")
        # Optional: the attribute may be renamed by the schema; check it only where it exists.
        if args.launcher is not None and "launcher" in attrs and text(attrs["launcher"]) != args.launcher:
            problems.append(f"launcher is '{text(attrs['launcher'])}', expected '{args.launcher}'")
        if "complete" in attrs and int(attrs["complete"]) != 1:
            problems.append("the run is not marked complete")
        tables = ["epochs"]
        if args.study:
            gpus = [int(g) for g in f["study"]["gpus"]] if "study" in f else []
            if not gpus:
                problems.append("no /study rows")
            tables = [f"configs/gpus_{g}/epochs" for g in gpus]
        rows = 0
        for t in tables:
            if t not in f:
                problems.append(f"no /{t} table")
            elif f[t].shape[0] < args.min_epochs:
                problems.append(f"/{t} has {f[t].shape[0]} rows, expected >= {args.min_epochs}")
            else:
                rows += f[t].shape[0]
    for p in problems:
        print(f"{args.file}: {p}")
    if not problems:
        print(f"{args.file}: ok (job {args.job_id!r}, {rows} epoch row(s) in {len(tables)} table(s))")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
