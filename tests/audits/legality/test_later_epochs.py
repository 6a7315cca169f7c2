"""A score kept only in a later epoch of the loop around a score-first pass (`if epoch ==
EPOCHS - 1:`, or a total zeroed at each epoch's start) is a score after the adaptation, also
where it reads the loss the update trains on; a loss kept so after a fresh pass scored the
tokens is the training's log, not a score."""

from legality_fixtures import ROOT
from support import audit_findings, by_rule, write_folder

SHARED = (ROOT / "ttt_score_after_adapt" / "ttt_shared_forward_last_epoch.py").read_text()
_LOOP = SHARED[SHARED.index("def adapt_and_score"):SHARED.index("def main")]
# The chunk is scored by a forward of its own first; the epochs then train on it, keeping the
# last epoch's training loss for the log.
LOGGED = SHARED.replace(_LOOP, """def adapt_and_score(model, tokens):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    n_chunks = (tokens.numel() - 1) // CHUNK
    nll, count, last_train_loss = 0.0, 0, 0.0
    for ci in range(n_chunks):
        x = tokens[ci * CHUNK:(ci + 1) * CHUNK]
        y = tokens[ci * CHUNK + 1:(ci + 1) * CHUNK + 1]
        with torch.no_grad():
            scored = model(x, y)
            nll += scored.sum().item()
            count += scored.numel()
        for epoch in range(EPOCHS):
            per_token = model(x, y)
            if epoch == EPOCHS - 1:
                last_train_loss += per_token.mean().item()
            opt.zero_grad()
            per_token.mean().backward()
            opt.step()
    print(f"ttt_train_loss:{last_train_loss / n_chunks:.4f}")
    return nll / count


""")


def _ttt(tmp_path, source):
    folder = write_folder(tmp_path, {"train_gpt.py": source})
    return by_rule(audit_findings(folder, only=frozenset({"TTT_SCORE_AFTER_ADAPT"})), "TTT_SCORE_AFTER_ADAPT")


def test_the_last_epochs_score_of_a_shared_forward_fails(tmp_path):
    f = _ttt(tmp_path, SHARED)
    step_line = SHARED[:SHARED.index("opt.step()  # expect")].count("\n") + 1
    assert [(str(x.severity), x.line) for x in f] == [("FAIL", step_line)]
    assert "scored again" in f[0].message


def test_a_training_loss_logged_in_the_last_epoch_after_a_fresh_score_is_no_score(tmp_path):
    assert "with torch.no_grad():\n            scored = model(x, y)" in LOGGED
    assert not by_rule(_ttt(tmp_path, LOGGED), "TTT_SCORE_AFTER_ADAPT", "FAIL")


def test_a_total_zeroed_at_each_epochs_start_keeps_the_last_epochs_score(tmp_path):
    """Every epoch scores, but the total starts again at zero in each: what remains after the
    loop is the last epoch's score (PRs #596, #605, #614)."""
    source = SHARED.replace("    for epoch in range(EPOCHS):\n",
                            "    for epoch in range(EPOCHS):\n        nll, count = 0.0, 0\n").replace(
        "            if epoch == EPOCHS - 1:\n                with torch.no_grad():\n"
        "                    nll += per_token.sum().item()  # expect: TWO_PASS_RESCORE FAIL\n"
        "                    count += per_token.numel()\n",
        "            with torch.no_grad():\n                nll += per_token.sum().item()\n"
        "                count += per_token.numel()\n")
    assert "        nll, count = 0.0, 0\n" in source and "if epoch ==" not in source
    assert [str(x.severity) for x in _ttt(tmp_path, source)] == ["FAIL"]


def test_a_last_epoch_test_through_a_name_with_an_option_off_by_default_fails(tmp_path):
    """`should_score = every or epoch == EPOCHS - 1`, then `if should_score:` (PR #595): with the
    option at its default only the last epoch scores, so the finding is no "only when the
    option is set" WARN."""
    source = SHARED.replace(
        "    for epoch in range(EPOCHS):\n",
        "    every = bool(int(os.environ.get(\"TTT_SCORE_EVERY_EPOCH\", \"0\")))\n"
        "    for epoch in range(EPOCHS):\n        should_score = every or epoch == EPOCHS - 1\n").replace(
        "            if epoch == EPOCHS - 1:\n", "            if should_score:\n")
    assert "if should_score:" in source
    f = _ttt(tmp_path, source)
    assert [str(x.severity) for x in f] == ["FAIL"] and "scored again" in f[0].message
    assert "not with the default settings" not in f[0].message


def test_a_training_loss_kept_through_a_name_after_a_fresh_score_is_still_no_score(tmp_path):
    source = LOGGED.replace("            if epoch == EPOCHS - 1:\n",
                            "            last = epoch == EPOCHS - 1\n            if last:\n")
    assert "if last:" in source
    assert not by_rule(_ttt(tmp_path, source), "TTT_SCORE_AFTER_ADAPT", "FAIL")



def test_a_name_bound_to_the_counter_test_on_one_branch_reads_the_same_whichever_branch_it_is(tmp_path):
    """`should_score` is the last-epoch test on one branch of a data-dependent `if` and True on
    the other: what the audit makes of it must not depend on which branch comes first."""
    def variant(first, second):
        return SHARED.replace(
            "            per_token = model(x, y)\n",
            "            per_token = model(x, y)\n            if ci % 2 == 0:\n"
            f"                should_score = {first}\n            else:\n"
            f"                should_score = {second}\n").replace(
            "            if epoch == EPOCHS - 1:\n", "            if should_score:\n")
    last = "epoch == EPOCHS - 1"
    readings = []
    for first, second in ((last, "True"), ("True", last)):
        source = variant(first, second)
        assert source.count("should_score = ") == 2
        (tmp_path / first[:4]).mkdir()
        readings.append([(str(x.severity), x.line) for x in _ttt(tmp_path / first[:4], source)])
    assert readings[0] == readings[1]
