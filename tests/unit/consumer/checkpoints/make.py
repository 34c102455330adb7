"""Regenerate the checkpoint fixtures in this directory with the code of an older commit.

Run it with PYTHONPATH set to a worktree of the commit a fixture is named after (see README.md)::

    git worktree add --detach /tmp/old-a9a0382 a9a0382
    PYTHONPATH=/tmp/old-a9a0382 python tests/unit/consumer/checkpoints/make.py all OUTDIR
    PYTHONPATH=/tmp/old-a9a0382 python tests/unit/consumer/checkpoints/make.py trainer OUTFILE.npz

``all OUTDIR``      drives a role-``all`` service on the in-memory broker of ``tests/fakes.py`` and
                    writes OUTDIR/checkpoint-000000000001.ckpt (and the ``part-*.ckpt`` files it
                    refers to, where the commit writes parts): readable by
                    ``consumer.checkpoint.CheckpointStore(OUTDIR, keep=1).latest()``.
``trainer OUTFILE`` drives a scorer and a trainer on that broker and saves, with ``np.savez``, the
                    state dict the trainer passes to ``publisher.publish_checkpoint`` (parts included).

``expected OUT.json NAME=FACTS...`` assembles expected.json from the ``--facts`` files (no project code).

``all`` and ``trainer`` print, on stdout, a JSON object of the facts a loader should restore (as
written, then as read back by the same commit's code: a fresh service restored from the fixture);
it exits 1 if the two differ. ``--facts FILE`` also writes that object to FILE.

The script uses only what every commit it was run at has (``Service``, ``load_settings``,
``ManualClock``, ``tests.fakes``) and branches where they differ (the memory of answered ids:
the ids themselves before d09a7bd, fingerprints after; ``consumer.roles`` for the trainer).
Everything is deterministic: a manual clock and seeded features; the learner is each commit's
default (paa-1 before the default learners changed, lr-ada-entropy-rff later, paired at a9a0382).
"""

from __future__ import annotations

import sys


# -- expected.json: assembled from --facts files, without the project's code --------------------------
def assemble(out: str, facts_files: list[str]) -> int:
    """``make.py expected OUT.json NAME=FACTS.json...``: the facts a loader should restore, by fixture."""
    import json
    from pathlib import Path

    expected = {}
    for arg in facts_files:
        name, path = arg.split("=", 1)
        report = json.loads(Path(path).read_text())
        if not report["read_back_matches"]:
            raise SystemExit(f"{path}: its read-back did not match what was written")
        w = report["written"]
        entry = {
            "commit": report["commit"], "role": report["role"], "files": report["files"],
            "settings": report["settings"], "created_at": report["file"]["service_meta"]["created_at"],
            "memory_layout": "fingerprints in parts" if any(".applied." in k for k in report["file"]["keys"])
            else "ids" if "pending.applied_ids" in report["file"]["keys"] else "?",
            "learner_budget_format_version": report["file"]["learner_budget_format_version"],
            "learner_meta": report["file"]["learner_meta"],
            "learner": w["learner"], "labels_": w["labels_"], "updates_": w["updates_"], "rounds_": w["rounds_"],
            "pending_count": w["pending_count"], "pending_ids": w["pending_ids"],
            "applied_count": w["applied_count"], "applied_examples": w["applied_ids"][:2] + w["applied_ids"][-1:],
            "applied_ids": w["applied_ids"],
            "expired_count": w["expired_count"], "expired_examples": w["expired_ids"][:2] + w["expired_ids"][-1:],
            "expired_ids": w["expired_ids"],
            "forgotten_count": len(w["forgotten_ids"]), "forgotten_examples": w["forgotten_ids"][:3],
            "totals": w["totals"], "offsets": w["offsets"], "outputs": w["outputs"],
        }
        if "parked_ids" in w:
            entry["parked_ids"] = w["parked_ids"]
            entry["parts"] = report["file"]["parts"]
        expected[name] = entry
    Path(out).write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["expected"]:
    sys.exit(assemble(sys.argv[2], sys.argv[3:]))

# The project's editable install maps ``consumer`` and ``learners`` to /work/main: a module the old
# worktree lacks would silently come from there. Only the worktree on PYTHONPATH may answer.
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path[:] = [p for p in sys.path if "__editable__" not in p]

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import orjson  # noqa: E402
from consumer.service import Service  # noqa: E402

import consumer  # noqa: E402
from consumer.clock import ManualClock  # noqa: E402
from consumer.config import load_settings  # noqa: E402
from tests.fakes import FakeClients, LocalBroker  # noqa: E402

ALL_TOPICS = ("features", "predictions", "label-requests", "labels", "dead-letters")
TRAINER_TOPICS = (*ALL_TOPICS, "model", "trainer-lease")
TTL_S = 320.0  # short: requests expire within the run; at a9a0382 a memory segment seals every TTL/32 = 10 s
BATCH = 60


def settings_for(checkpoint_dir: Path, role: str = "all"):
    return load_settings(
        role=role, checkpoint_dir=checkpoint_dir, n_features=4, metrics_port=0, query_rate_target=0.3,
        group_instance_id="fixture",  # the meta's "instance", else the host name: the same bytes on any host
        labels={"ttl_s": TTL_S},
        checkpoint={"every_s": 1e9, "every_labels": 10**9, "keep": 1},  # only the checkpoints asked for
    )


def commit_of_code() -> str:
    root = Path(consumer.__file__).resolve().parent.parent
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class World:
    """An in-memory broker, a manual clock, and helpers to write records and labels."""

    def __init__(self, topics) -> None:
        self.broker = LocalBroker()
        for t in topics:
            self.broker.create(t)
        self.clock = ManualClock()
        self.truth: dict[str, int] = {}
        self.seen: list[str] = []  # every id fed or labelled, in order
        self.labelled: list[str] = []  # every id labelled, once, in order

    def feed(self, prefix: str, n: int = BATCH) -> None:
        rng = np.random.default_rng(sum(map(ord, prefix)))
        for i in range(n):
            x = np.round(rng.standard_normal(4), 6)
            rid = f"{prefix}{i}"
            self.truth[rid] = 1 if x[0] + 0.5 * x[1] > 0 else -1
            self.broker.append("features", orjson.dumps({"id": rid, "features": x.tolist()}), rid.encode())
            self.seen.append(rid)

    def label(self, rid: str, value: int | None = None) -> None:
        value = self.truth.get(rid, 1) if value is None else value
        self.broker.append("labels", orjson.dumps({"id": rid, "label": value}), rid.encode())
        if rid not in self.seen:
            self.seen.append(rid)
        if rid not in self.labelled:
            self.labelled.append(rid)

    def deliver(self, clients) -> None:
        for producer in clients.producers:
            if not getattr(producer, "closed", False):
                producer.poll()

    def requested(self, clients, prefix: str) -> list[str]:
        self.deliver(clients)
        ids = [orjson.loads(v)["id"] for v in self.broker.values("label-requests") if v is not None]
        return [rid for rid in ids if rid.rstrip("0123456789") == prefix]


# -- facts ----------------------------------------------------------------------------------------------
def _memory_size(pending, name: str) -> int:
    if hasattr(pending, "remembered"):  # a9a0382: {"applied": n, "expired": n}
        return int(pending.remembered()[name])
    return len(getattr(pending, f"_{name}"))


def _status(pending, rid: str) -> str:
    return pending.status(rid)


def facts_of(service: Service, candidates: list[str], labelled: list[str], parked: tuple = ()) -> dict:
    """What a loader should restore, read from a live service (``candidates``: every id seen)."""
    learner, pending = service.learner, service.pending
    statuses = {rid: _status(pending, rid) for rid in candidates}
    applied = [rid for rid in candidates if statuses[rid] == "applied"]
    expired = [rid for rid in candidates if statuses[rid] == "expired"]
    out = {
        "learner": learner.name,
        "labels_": int(learner.labels_),
        "updates_": int(getattr(learner, "updates_", -1)),
        "rounds_": int(getattr(learner, "rounds_", -1)),
        "pending_count": len(pending),
        "pending_ids": list(pending.ids()),
        "applied_count": _memory_size(pending, "applied"),
        "applied_ids": applied,
        "expired_count": _memory_size(pending, "expired"),
        "expired_ids": expired,
        # labelled, then forgotten one TTL after they were applied: unknown now (not ghosts nor parked)
        "forgotten_ids": [rid for rid in labelled if statuses[rid] == "unknown"
                          and not rid.startswith("ghost") and rid not in parked],
        "totals": json.loads(service.totals.to_json()),
        "offsets": [[t, p, o] for (t, p), o in sorted(service.offsets.next.items())],
        "outputs": [[t, p, o] for (t, p), o in sorted(service._output_floor.items())],
    }
    controller = learner.budget
    if controller is not None:
        out["budget_controller_format_version"] = int(controller.state_dict()["format_version"])
    return out


def _file_facts(state: dict) -> dict:
    budget = state.get("learner.budget.format_version")
    return {
        "keys": sorted(state),
        "learner_budget_format_version": None if budget is None else int(budget),
        "service_meta": json.loads(str(state["service.meta"])),
        "learner_meta": json.loads(str(state["learner.meta"])),
    }


# -- role all ------------------------------------------------------------------------------------------
def drive_all(world: World, service: Service, clients) -> None:
    """Requests answered, expired, answered again, late, unknown; some left pending. Times from T0:
    a at 0 (half answered at 2), b at 12 (none answered), c at 32 (half answered), a expires at 321,
    b at 333 (the answers to a forgotten by then), d at 345 (half answered), checkpoint at 345."""
    clock = world.clock
    service.start()
    world.feed("a")
    service.run_once()
    req_a = world.requested(clients, "a")
    clock.advance(2)
    for rid in req_a[: len(req_a) // 2]:
        world.label(rid)
    service.run_once()
    clock.advance(10)
    world.feed("b")
    service.run_once()
    clock.advance(20)
    world.feed("c")
    service.run_once()
    req_c = world.requested(clients, "c")
    for rid in req_c[: len(req_c) // 2]:
        world.label(rid)
    service.run_once()
    clock.advance(TTL_S + 1 - 32)  # T0 + 321: a's unanswered requests expire
    service.run_once()
    clock.advance(12)  # T0 + 333: b's expire; the answers to a (at T0 + 2) are forgotten
    service.run_once()
    unanswered_a = req_a[len(req_a) // 2 :]
    for rid in unanswered_a[:3]:
        world.label(rid)  # late: expired
    for rid in req_c[:2]:
        world.label(rid)  # again: duplicate
    for rid in req_a[:2]:
        world.label(rid)  # answered more than a TTL ago: forgotten, unknown
    world.label("ghost0", 1)  # never requested: unknown
    service.run_once()
    clock.advance(12)  # T0 + 345
    world.feed("d")
    service.run_once()
    req_d = world.requested(clients, "d")
    for rid in req_d[: len(req_d) // 2]:
        world.label(rid)
    service.run_once()


def copy_checkpoint(store_dir: Path, out_dir: Path) -> list[Path]:
    """The newest checkpoint of ``store_dir`` as OUTDIR/checkpoint-000000000001.ckpt, with its parts."""
    from consumer.checkpoint import CheckpointStore

    found = CheckpointStore(store_dir, keep=1).paths()
    newest = found[0]
    try:
        from consumer.checkpoint import part_paths  # a9a0382 on
        parts = part_paths(newest)
    except ImportError:
        parts = sorted(store_dir.glob("part-*.ckpt"))
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in list(out_dir.glob("checkpoint-*.ckpt")) + list(out_dir.glob("part-*.ckpt")):
        old.unlink()
    written = [out_dir / "checkpoint-000000000001.ckpt"]
    shutil.copyfile(newest, written[0])
    for part in parts:
        shutil.copyfile(part, out_dir / part.name)
        written.append(out_dir / part.name)
    return written


def make_all(out_dir: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        world = World(ALL_TOPICS)
        settings = settings_for(tmp / "ckpt")
        clients = FakeClients(world.broker)
        service = Service(settings, clock=world.clock, clients=clients, serve_http=False)
        drive_all(world, service, clients)
        service.checkpoint()
        written = facts_of(service, world.seen, world.labelled)
        files = copy_checkpoint(tmp / "ckpt", out_dir)

        # read back 1: a new service in the same harness (same broker and clock), started as after a crash
        again = Service(settings, clock=world.clock, clients=clients, serve_http=False)
        again.start()
        same_harness = facts_of(again, world.seen, world.labelled)
        # read back 2: the fixture directory alone, in a fresh harness, restored without a broker's help
        fresh = World(ALL_TOPICS)
        copied = tmp / "fresh"
        shutil.copytree(out_dir, copied)
        alone = Service(settings_for(copied), clock=fresh.clock, clients=FakeClients(fresh.broker), serve_http=False)
        alone._restore()
        from_fixture = facts_of(alone, world.seen, world.labelled)

        from consumer.checkpoint import CheckpointStore

        _, state = CheckpointStore(out_dir, keep=1).latest()
        return {
            "commit": commit_of_code(),
            "role": "all",
            "settings": {"n_features": 4, "query_rate_target": 0.3, "labels.ttl_s": TTL_S,
                         "learner": settings.learner, "learner_resolved": service.learner.name},
            "files": {p.name: p.stat().st_size for p in files},
            "file": _file_facts(state),
            "written": written,
            "restored_same_harness": same_harness,
            "restored_from_fixture_alone": from_fixture,
        }


# -- role trainer -------------------------------------------------------------------------------------
def make_trainer(out_file: Path) -> dict:
    from consumer.roles import service_for  # a9a0382 (earlier: consumer.service.service_for)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        world = World(TRAINER_TOPICS)
        made = {}
        for role in ("scorer", "trainer"):
            made[role] = service_for(settings_for(tmp / role, role=role), clock=world.clock,
                                     clients=FakeClients(world.broker), serve_http=False)
        scorer, trainer = made["scorer"], made["trainer"]
        trainer.start()
        scorer.start()
        clock = world.clock

        def score(prefix: str) -> list[str]:
            world.feed(prefix)
            scorer.run_once()
            return world.requested(scorer._clients, prefix)

        req_a = score("a")
        trainer.run_once()
        clock.advance(2)
        for rid in req_a[: len(req_a) // 2]:
            world.label(rid)
        trainer.run_once()
        clock.advance(10)
        req_b = score("b")
        trainer.run_once()
        for rid in req_b[: len(req_b) // 2]:
            world.label(rid)
        trainer.run_once()
        clock.advance(TTL_S + 1 - 12)  # T0 + 321: a's unanswered requests expire
        trainer.run_once()
        for rid in req_a[len(req_a) // 2 :][:3]:
            world.label(rid)  # late: expired
        for rid in req_b[:2]:
            world.label(rid)  # again: duplicate
        trainer.run_once()
        clock.advance(5)
        req_c = score("c")
        trainer.run_once()
        for rid in req_c[: len(req_c) // 3]:
            world.label(rid)
        trainer.run_once()
        # labels whose requests the trainer has not read: the scorer has not scored their records yet
        world.feed("p", 10)
        for rid in ("p0", "p1", "p2"):
            world.label(rid)
        trainer.run_once()  # parked; the clock stands still, so none is settled as unknown

        captured = {}
        publish = trainer.publisher.publish_checkpoint

        def capture(state, *args, **kwargs):
            captured["state"] = {k: np.array(v, copy=True) for k, v in state.items()}
            captured["parts"] = sorted(kwargs.get("parts", ()))
            return publish(state, *args, **kwargs)

        trainer.publisher.publish_checkpoint = capture
        trainer.checkpoint()
        trainer.publisher.publish_checkpoint = publish
        state = captured["state"]
        out_file.parent.mkdir(parents=True, exist_ok=True)
        with open(out_file, "wb") as f:  # np.savez on a file object: the name stays as given
            np.savez(f, **state)
        written = facts_of(trainer, world.seen, world.labelled, tuple(trainer._parked))
        written["parked_ids"] = list(trainer._parked)

        # read back 1: the npz into a fresh trainer, as Trainer._restore_from_topic loads a checkpoint
        from consumer.records import Label

        fresh = World(TRAINER_TOPICS)
        loader = service_for(settings_for(tmp / "loader", role="trainer"), clock=fresh.clock,
                             clients=FakeClients(fresh.broker), serve_http=False)
        with np.load(out_file, allow_pickle=False) as archive:
            loaded = {k: archive[k] for k in archive.files}
        loader._load(loaded, str(out_file))
        loader._parked = {rid: [Label(*lab), at, None] for rid, lab, at in
                          orjson.loads(loaded["service.parked"].tobytes())}
        from_npz = facts_of(loader, world.seen, world.labelled, tuple(loader._parked))
        from_npz["parked_ids"] = list(loader._parked)
        # read back 2: a new trainer started on a broker holding only this model topic restores it
        # itself (Trainer.start → _restore_from_topic: newest checkpoint, its parts, the parked labels)
        other = World(TRAINER_TOPICS)
        for (topic, partition), messages in world.broker.log.items():
            if topic == trainer.settings.topics.model:
                other.broker.log[(topic, partition)] = list(messages)
        other.broker.partitions[trainer.settings.topics.model] = world.broker.partitions[trainer.settings.topics.model]
        successor = service_for(settings_for(tmp / "successor", role="trainer"), clock=other.clock,
                                clients=FakeClients(other.broker), serve_http=False)
        successor.start()
        from_topic = facts_of(successor, world.seen, world.labelled, tuple(successor._parked))
        from_topic["parked_ids"] = list(successor._parked)
        # and the state the model topic holds is the state saved (parts joined in)
        from consumer.model_topic import read_checkpoint

        _, on_topic = read_checkpoint(trainer._clients.reader, trainer.settings.topics.model, timeout_s=10)
        differ = sorted(k for k in set(on_topic) | set(loaded)
                        if k not in on_topic or k not in loaded
                        or not np.array_equal(np.asarray(on_topic[k]), loaded[k]))
        return {
            "commit": commit_of_code(),
            "role": "trainer",
            "settings": {"n_features": 4, "query_rate_target": 0.3, "labels.ttl_s": TTL_S,
                         "learner": trainer.settings.learner, "learner_resolved": trainer.learner.name},
            "files": {out_file.name: out_file.stat().st_size},
            "file": {**_file_facts(loaded), "parts": captured["parts"]},
            "written": written,
            "restored_from_npz": from_npz,
            "restored_by_a_new_trainer_from_the_model_topic": from_topic,
            "npz_vs_model_topic_differ": differ,
        }


def _consistent(report: dict) -> list[str]:
    written = report["written"]
    bad = []
    for name, got in report.items():
        if name.startswith("restored"):
            for key, value in written.items():
                if got.get(key) != value:
                    bad.append(f"{name}.{key}: {got.get(key)!r} != written {value!r}")
    if report.get("npz_vs_model_topic_differ"):
        bad.append(f"npz and model topic differ: {report['npz_vs_model_topic_differ']}")
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=("all", "trainer"))
    parser.add_argument("out", type=Path, help="OUTDIR for all, OUTFILE (.npz) for trainer")
    parser.add_argument("--facts", type=Path, help="also write the facts (JSON) here")
    args = parser.parse_args()
    report = make_all(args.out) if args.kind == "all" else make_trainer(args.out)
    report["code"] = str(Path(consumer.__file__).resolve().parent.parent)
    bad = _consistent(report)
    report["read_back_matches"] = not bad
    text = json.dumps(report, indent=1, sort_keys=True)
    print(text)
    if args.facts:
        args.facts.write_text(text + "\n")
    for line in bad:
        print("MISMATCH", line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
