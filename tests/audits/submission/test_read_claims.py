"""The tolerant submission.json reader."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from audits.submission.metadata import read_claims


def test_valid_file_gives_claims_and_per_seed_results():
    claims = read_claims(json.dumps({
        "author": "A", "github_id": "a", "name": "n", "date": "2026-04-09T10:00:00Z", "val_bpb": 1.08,
        "bytes_total": 15991930, "track": "10min_16mb",
        "seed_results": {"42": {"val_bpb": 1.0807, "artifact_bytes": 15991930, "steps": 4550}}}))
    assert claims.problems == [] and claims.val_bpb == 1.08 and claims.bytes_total == 15991930
    assert claims.per_seed == {42: {"val_bpb": 1.0807, "artifact_bytes": 15991930, "steps": 4550}}


def test_parallel_seed_lists_are_paired():
    claims = read_claims(json.dumps({"seeds": [42, 0], "seed_scores": [1.09057, 1.09084]}))
    assert claims.per_seed == {42: {"val_bpb": 1.09057}, 0: {"val_bpb": 1.09084}}


def test_not_json_not_object_and_bad_values_are_problems():
    assert "not valid JSON" in read_claims("{'a': 1}").problems[0]
    assert "not an object" in read_claims("[1, 2]").problems[0]
    claims = read_claims(json.dumps({"author": "", "github_id": 3, "name": "n", "date": "yesterday",
                                     "val_bpb": "1.08"}))
    text = " | ".join(claims.problems)
    assert "'author'" in text and "'date'" in text and "'val_bpb' is '1.08'" in text
    assert claims.val_bpb is None


def test_alternate_key_is_named_in_the_problem_and_still_read():
    claims = read_claims(json.dumps({"author": "A", "github_id": "a", "name": "n", "date": "2026-04-01",
                                     "mean_val_bpb": 1.1}))
    assert claims.problems == ["missing 'val_bpb' (found 'mean_val_bpb': rename it to 'val_bpb')"]
    assert (claims.val_bpb, claims.val_bpb_key) == (1.1, "mean_val_bpb")


def test_nan_and_booleans_are_not_numbers():
    claims = read_claims('{"author":"A","github_id":"a","name":"n","date":"2026-04-01","val_bpb":NaN,'
                         '"bytes_total":true}')
    assert claims.val_bpb is None and claims.bytes_total is None
    assert any("val_bpb" in p for p in claims.problems)


def test_line_of_a_key():
    claims = read_claims('{\n  "author": "A",\n  "val_bpb": 1.0\n}')
    assert claims.line_of("val_bpb") == 3 and claims.line_of("missing") is None


def test_deep_nesting_is_a_problem_not_a_crash():
    assert read_claims("[" * 100000 + "]" * 100000).problems


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["author", "github_id", "name", "date", "val_bpb", "seeds",
                                        "seed_results", "seed_scores", "bytes_total", "bytes_code",
                                        "track", "val_loss", "other"]), JSON_VALUES, max_size=10))
def test_reader_never_raises_on_any_json_object(data):
    claims = read_claims(json.dumps(data))
    assert isinstance(claims.problems, list)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=500))
def test_reader_never_raises_on_any_text(text):
    read_claims(text)
