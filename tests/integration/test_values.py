"""
Numbers at the edges of their column types, end to end (issue 5 item 7): an
integer beyond int64 in either direction and a number beyond double range
(1e999999, -1e999999) pushed into a real zxd.  What must hold: a value that
does not fit its column is NULL plus a row in <table>__rejects with its raw
literal and a reason a person understands, the same in both directions; a
column is never made TEXT because of a number; a REAL column takes integers
beyond int64 (rounded); a TEXT column keeps every literal exactly; a nested
value keeps its literal in the JSON text (on Postgres, whose JSONB holds
numbers as numeric, a nested number beyond numeric's range is a misfit).

The bodies are written by hand: Python's json module cannot write 1e999999.
The workspace is read read-only, as the other tests do.  No timing
thresholds: pushes use ack: commit, so rows and rejects are committed when
the 202 arrives.
"""

import json

import pytest

from conftest import uid

PIPES = {
    "vi": {"ack": "commit"},     # INTEGER column, then out-of-range integers
    "vr": {"ack": "commit"},     # columns created by an out-of-range value
    "vt": {"ack": "commit"},     # TEXT and JSON columns
    "vn": {"ack": "commit"},     # NDJSON and arrays, mixed
}

INT64_MIN = -9223372036854775808
INT64_MAX = 9223372036854775807
REAL_RANGE = "(-1.7976931348623157e+308 to 1.7976931348623157e+308)"


@pytest.fixture(scope="module")
def z(module_zxd):
    return module_zxd(PIPES)


def push_raw(z, name, body, ndjson=False):
    """Push a hand-written body; assert 202 and return the answer."""
    r = z.push(name, body=body, ndjson_body=ndjson,
               content_type="application/x-ndjson" if ndjson else None)
    assert r.status == 202, f"push to {name}: expected 202, got {r!r} for {body!r}"
    return r


def decl(z, table):
    """{column: kind} ("integer", "real", "text", "json", ...: conftest's
    column_kinds, the declared names of either backend)."""
    return z.column_kinds(table)


def rejects(z, table, tag_raws):
    """{raw_value: (column_name, column_type, reason)} of the rejects whose
    raw value is one of tag_raws."""
    got = {}
    for col, ctype, raw, reason in z.query(
            f'SELECT column_name, column_type, raw_value, reason FROM "{table}__rejects"'):
        if raw in tag_raws:
            assert raw not in got, f"raw value {raw} rejected twice: {got[raw]} and {reason}"
            got[raw] = (col, ctype, reason)
    return got


def test_integers_beyond_int64_both_directions(z):
    tag = uid()
    push_raw(z, "vi", json.dumps({"tag": tag, "k": "first", "n": 1}))
    assert decl(z, "vi").get("n") == "integer"
    body = ("[" + ",".join(
        '{"tag": "%s", "k": "%s", "n": %s}' % (tag, k, lit) for k, lit in [
            ("below", "-9223372036854775809"),
            ("above", "9223372036854775808"),
            ("far_below", "-18446744073709551617"),
            ("far_above", "99999999999999999999"),
            ("min", str(INT64_MIN)),
            ("max", str(INT64_MAX)),
        ]) + "]")
    push_raw(z, "vi", body)
    got = dict(z.query("SELECT k, n FROM vi WHERE tag = ?", (tag,)))
    # never clamped to INT64_MIN / INT64_MAX, in either direction
    assert got == {"first": 1, "below": None, "above": None, "far_below": None,
                   "far_above": None, "min": INT64_MIN, "max": INT64_MAX}, got
    assert decl(z, "vi").get("n") == "integer", "a misfit must not change the column type"

    rj = rejects(z, "vi", {"-9223372036854775809", "9223372036854775808",
                           "-18446744073709551617", "99999999999999999999"})
    assert rj.get("-9223372036854775809") == (
        "n", "integer",
        "integer -9223372036854775809 is below the smallest INTEGER (-9223372036854775808)"), rj
    assert rj.get("9223372036854775808") == (
        "n", "integer",
        "integer 9223372036854775808 is above the largest INTEGER (9223372036854775807)"), rj
    assert rj.get("-18446744073709551617", (None, None, ""))[2].startswith(
        "integer -18446744073709551617 is below the smallest INTEGER"), rj
    assert rj.get("99999999999999999999", (None, None, ""))[2].startswith(
        "integer 99999999999999999999 is above the largest INTEGER"), rj


def test_number_beyond_double_makes_a_real_column(z):
    tag = uid()
    push_raw(z, "vr", '{"tag": "%s", "k": "pos", "x": 1e999999, "y": 2}' % tag)
    push_raw(z, "vr", '{"tag": "%s", "k": "neg", "x": -1e999999, "y": 3}' % tag)
    cols = decl(z, "vr")
    assert cols.get("x") == "real", f"an out-of-range number made column x {cols.get('x')}: {cols}"
    got = dict(z.query("SELECT k, x FROM vr WHERE tag = ?", (tag,)))
    assert got == {"pos": None, "neg": None}, got
    rj = rejects(z, "vr", {"1e999999", "-1e999999"})
    assert rj.get("1e999999") == (
        "x", "real", "number 1e999999 is out of the range of REAL " + REAL_RANGE), rj
    assert rj.get("-1e999999") == (
        "x", "real", "number -1e999999 is out of the range of REAL " + REAL_RANGE), rj
    # the rest of the row is kept
    assert z.count("vr", "tag = ? AND y IS NOT NULL", (tag,)) == 2


def test_integer_beyond_int64_makes_a_real_column(z):
    tag = uid()
    push_raw(z, "vr", '{"tag": "%s", "k": "a", "big": 18446744073709551616, '
                      '"neg": -9223372036854775809}' % tag)
    cols = decl(z, "vr")
    assert cols.get("big") == "real" and cols.get("neg") == "real", cols
    big, neg = z.query("SELECT big, neg FROM vr WHERE tag = ?", (tag,))[0]
    assert big == 18446744073709551616.0 and isinstance(big, float), big
    assert neg == -9223372036854775808.0 and isinstance(neg, float), neg
    # a REAL column refuses only what is beyond double range
    push_raw(z, "vr", '{"tag": "%s", "k": "b", "big": -1e400}' % tag)
    assert z.query("SELECT big FROM vr WHERE tag = ? AND k = 'b'", (tag,)) == [(None,)]
    assert "-1e400" in rejects(z, "vr", {"-1e400"})


def test_text_and_json_columns_keep_the_literal(z):
    tag = uid()
    push_raw(z, "vt", json.dumps({"tag": tag, "k": "first", "s": "text", "j": {"a": 1}}))
    cols = decl(z, "vt")
    assert cols.get("s") == "text" and cols.get("j") == "json", cols
    push_raw(z, "vt", '{"tag": "%s", "k": "lit", "s": 1e999999, "j": 18446744073709551616,'
                      ' "o": {"l": [-9223372036854775809]}}' % tag)
    s, j, o = z.query("SELECT s, j, o FROM vt WHERE tag = ? AND k = 'lit'", (tag,))[0]
    assert s == "1e999999", f"TEXT must keep the literal exactly, got {s!r}"
    assert j is not None, "an integer beyond int64 is a JSON number: it fits a JSON column"
    assert o == '{"l":[-9223372036854775809]}', \
        f"a nested integer beyond int64 must keep its literal, got {o!r}"
    # a JSON column cannot hold a number beyond double range (SQLite would
    # read it back as Infinity): a reject, not a silent Infinity
    push_raw(z, "vt", '{"tag": "%s", "k": "inf", "j": 1e999999}' % tag)
    assert z.query("SELECT j FROM vt WHERE tag = ? AND k = 'inf'", (tag,)) == [(None,)]
    rj = rejects(z, "vt", {"1e999999"})
    assert rj.get("1e999999", (None, None, ""))[:2] == ("j", "json"), rj


def test_nested_number_beyond_double_in_a_json_column(z, request):
    """SQLite keeps the nested literal in the JSON text.  Postgres's JSONB
    cannot hold it (its numbers are numeric, at most 131,072 digits): that
    value is a misfit there, NULL and a reject, and the rest of the row is
    kept, like every value that does not fit its column."""
    tag = uid()
    push_raw(z, "vt", '{"tag": "%s", "k": "nested", "s": "kept", '
                      '"o": {"n": -1e999999, "l": [-9223372036854775809]}}' % tag)
    if z.workspace == "sqlite":
        s, o = z.query("SELECT s, o FROM vt WHERE tag = ?", (tag,))[0]
        assert s == "kept"
        assert o == '{"n":-1e999999,"l":[-9223372036854775809]}', \
            f"a nested out-of-range number must keep its literal, got {o!r}"
        return
    assert z.query("SELECT s, o FROM vt WHERE tag = ?", (tag,)) == [("kept", None)], \
        "the row must be kept, the JSON value that Postgres cannot hold NULL"
    rj = [r for r in z.query('SELECT column_name, raw_value FROM "vt__rejects"')
          if "-1e999999" in (r[1] or "") and tag not in (r[1] or "")]
    assert len(rj) == 1 and rj[0][0] == "o", rj


def test_ndjson_and_mixed_batches(z):
    tag = uid()
    lines = [
        '{"tag": "%s", "k": "a", "n": 5}' % tag,
        '{"tag": "%s", "k": "b", "n": -9223372036854775809}' % tag,
        '{"tag": "%s", "k": "c", "n": 1e999999}' % tag,
        '{"tag": "%s", "k": "d", "n": 2.5}' % tag,
    ]
    push_raw(z, "vn", "\n".join(lines) + "\n", ndjson=True)
    # int, out-of-range integer and real in one batch: REAL, like int + real
    assert decl(z, "vn").get("n") == "real"
    got = dict(z.query("SELECT k, n FROM vn WHERE tag = ?", (tag,)))
    assert got == {"a": 5.0, "b": -9223372036854775808.0, "c": None, "d": 2.5}, got
    rj = rejects(z, "vn", {"1e999999"})
    assert rj.get("1e999999", (None, None, ""))[2].startswith(
        "number 1e999999 is out of the range of REAL"), rj
    # the same pushed as an array: the same rows (fast path or not)
    tag2 = uid()
    push_raw(z, "vn", "[" + ",".join(l.replace(tag, tag2) for l in lines) + "]")
    got2 = dict(z.query("SELECT k, n FROM vn WHERE tag = ?", (tag2,)))
    assert got2 == got, (got2, got)


def test_out_of_range_number_as_event_is_400(z):
    r = z.push("vn", body="1e999999")
    assert r.status == 400, r
    assert "is a number" in json.dumps(r.json), r
