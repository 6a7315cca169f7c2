"""Training data copied into a registered buffer is stored in the artifact with the weights (the
legal home of a table built from training data); a buffer the state dict leaves out is not."""

from legality_fixtures import ROOT
from support import audit_findings, by_rule, write_folder

SOURCE = (ROOT / "train_data_at_eval" / "train_table_in_buffer.py").read_text()
REGISTER = 'self.register_buffer("prior", torch.full((V, V), 1.0 / V))'


def _train_at_eval(tmp_path, source):
    return by_rule(audit_findings(write_folder(tmp_path, {"train_gpt.py": source}),
                                  only=frozenset({"TRAIN_DATA_AT_EVAL"})), "TRAIN_DATA_AT_EVAL")


def test_a_table_in_a_kept_buffer_is_in_the_artifact(tmp_path):
    assert REGISTER in SOURCE
    assert not [f for f in _train_at_eval(tmp_path, SOURCE) if f.severity > 0]


def test_a_buffer_left_out_of_the_state_dict_carries_training_data_to_the_score(tmp_path):
    source = SOURCE.replace(REGISTER, REGISTER[:-1] + ", persistent=False)")
    assert {str(f.severity) for f in _train_at_eval(tmp_path, source)} == {"FAIL"}


def test_a_buffer_call_over_several_lines_is_read_to_its_closing_bracket():
    from audits.legality.program import _buffers

    source = ('self.register_buffer("kept", torch.zeros(4))\n'
              'self.register_buffer(\n    "dropped",\n    torch.zeros(4, dtype=torch.float32),\n'
              '    persistent=False,\n)\nself.register_buffer("after", x)  # persistent=False elsewhere\n')
    assert _buffers(source) == {"kept", "after"}
