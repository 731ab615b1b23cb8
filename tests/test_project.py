"""The project's workflows as project.yml and the README give them."""
import re
import shlex
import subprocess
from pathlib import Path

from weasel.util import load_project_config

REPO = Path(__file__).parents[1]


def test_the_quick_run_writes_its_figures_under_metrics_quick_and_raw_test_is_the_shipped_search():
    """The README's quick run: every figure train and evaluate write goes
    under metrics/quick/, which git ignores, never over the release's; the
    raw-text test evaluates the pipeline's own (shipped) search."""
    readme = (REPO / "README.md").read_text(encoding="utf8")
    [quick] = re.findall(r"`(spacy project run all \. --vars\.max_steps[^`]+)`", readme)
    args = shlex.split(quick.replace("\n", " "))[5:]
    overrides = {args[k][2:]: args[k + 1] for k in range(0, len(args), 2)}
    assert overrides["vars.metrics"] == "metrics/quick"
    for vars_, folder in ((overrides, "metrics/quick/"), ({}, "metrics/")):
        project = load_project_config(REPO, overrides=vars_)
        commands = {c["name"]: c for c in project["commands"]}
        steps = [commands[name] for name in project["workflows"]["all"]]
        written = [w for step in steps for line in step["script"] for w in line.split()
                   if w.startswith("metrics/")] + [o for step in steps for o in step.get("outputs", [])
                                                   if o.startswith("metrics/")]
        assert len(written) >= 5 and all(w.startswith(folder) for w in written)
        [raw] = [line for line in commands["evaluate"]["script"] if "--parser-sentences" in line]
        assert "_test_raw_shipped.json" in raw and "--beam-width" not in raw
    ignored = subprocess.run(["git", "check-ignore", "-q", "metrics/quick/rerank_ewt.json"], cwd=REPO)
    assert ignored.returncode == 0
