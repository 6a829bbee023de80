"""Patterns of Delaware 4.14: which arrangements each pattern accepts, pictures, specs."""
import json

import pytest

from services.patterns import (
    ALL_CELLS, BUILTIN_PATTERNS, FREE, LINES, Pattern, cells_to_picture, pattern_from_spec,
)


def cells(*picture_rows: str) -> frozenset:
    """Cells marked X in a 5-row picture, to state expectations the way a hall draws them."""
    return frozenset(
        (r, c) for r, row in enumerate(picture_rows) for c, mark in enumerate(row) if mark == "X"
    )


def test_any_row_is_the_five_horizontal_rows():  # DE 4.14.1
    p = pattern_from_spec("any_row")
    assert p.labels == ("row 1", "row 2", "row 3", "row 4", "row 5")
    assert p.arrangements[2] == cells(".....", ".....", "XXXXX", ".....", ".....")
    assert all(len(a) == 5 for a in p.arrangements)
    assert set().union(*p.arrangements) == ALL_CELLS


def test_any_column_is_the_five_vertical_rows():  # DE 4.14.2
    p = pattern_from_spec("any_column")
    assert p.labels == ("column B", "column I", "column N", "column G", "column O")
    assert p.arrangements[4] == cells("....X", "....X", "....X", "....X", "....X")


def test_any_diagonal_is_the_two_full_diagonals():  # DE 4.14.3
    p = pattern_from_spec("any_diagonal")
    assert set(p.arrangements) == {
        cells("X....", ".X...", "..X..", "...X.", "....X"),
        cells("....X", "...X.", "..X..", ".X...", "X...."),
    }
    assert all(FREE in a for a in p.arrangements)


def test_any_line_is_rows_columns_and_diagonals():  # DE 4.14.4
    p = pattern_from_spec("any_line")
    assert len(p.arrangements) == 12
    expected = (set(pattern_from_spec("any_row").arrangements)
                | set(pattern_from_spec("any_column").arrangements)
                | set(pattern_from_spec("any_diagonal").arrangements))
    assert set(p.arrangements) == expected


def test_two_lines_is_every_pair_of_distinct_lines():  # DE 4.14.5
    p = pattern_from_spec("two_lines")
    assert len(p.arrangements) == 66  # 12 choose 2
    assert len(set(p.labels)) == 66
    row1_col_b = p.arrangements[p.labels.index("row 1 + column B")]
    assert row1_col_b == cells("XXXXX", "X....", "X....", "X....", "X....")
    # Every arrangement is the union of exactly two different lines.
    lines = list(LINES.values())
    for a in p.arrangements:
        assert sum(1 for line in lines if line <= a) == 2


@pytest.mark.parametrize("name, picture", [
    ("letter_x", ("X...X", ".X.X.", "..X..", ".X.X.", "X...X")),
    ("letter_t", ("XXXXX", "..X..", "..X..", "..X..", "..X..")),
    ("letter_l", ("X....", "X....", "X....", "X....", "XXXXX")),
    ("letter_h", ("X...X", "X...X", "XXXXX", "X...X", "X...X")),
    ("plus_sign", ("..X..", "..X..", "XXXXX", "..X..", "..X..")),
    ("outside_edge", ("XXXXX", "X...X", "X...X", "X...X", "XXXXX")),
    ("four_corners", ("X...X", ".....", ".....", ".....", "X...X")),  # DE 4.14.7
    ("around_free", (".....", ".XXX.", ".X.X.", ".XXX.", ".....")),  # DE 4.14.8
    ("full_card", ("XXXXX",) * 5),  # DE 4.14.6
])
def test_single_arrangement_patterns(name, picture):
    p = pattern_from_spec(name)
    assert p.arrangements == (cells(*picture),)
    assert p.picture() == [[1 if m == "X" else 0 for m in row] for row in picture]


def test_around_free_leaves_out_the_free_space():
    assert FREE not in pattern_from_spec("around_free").arrangements[0]


def test_picture_of_a_many_arrangement_pattern_is_one_example_not_the_whole_card():
    picture = pattern_from_spec("any_row").picture()
    assert picture == [[1] * 5] + [[0] * 5] * 4


def test_to_json_is_json_and_rebuilds_the_same_pattern():
    for name, p in BUILTIN_PATTERNS.items():
        data = json.loads(json.dumps(p.to_json()))
        assert data["name"] == name
        assert data["arrangements"] == len(p.arrangements)
        assert data["description"]
        rebuilt = pattern_from_spec(data["spec"])
        assert rebuilt.arrangements == p.arrangements


def test_custom_shape_by_name():  # DE 4.14.9
    spec = {"name": "Kite", "shape": ["XX...", "XX...", "..X..", "...X.", "....x"]}
    p = pattern_from_spec(spec)
    assert p.name == "Kite"
    assert p.labels == ("Kite",)
    assert p.arrangements == (cells("XX...", "XX...", "..X..", "...X.", "....X"),)
    # The spec is normalised (lower-case x becomes X) and survives JSON.
    data = json.loads(json.dumps(p.to_json()))
    assert data["spec"]["shape"][4] == "....X"
    assert pattern_from_spec(data["spec"]).arrangements == p.arrangements


def test_custom_combination_of_lines():  # DE 4.14.5, a specified arrangement
    p = pattern_from_spec({"name": "Big T", "lines": ["row 1", "column N"]})
    assert p.arrangements == (pattern_from_spec("letter_t").arrangements[0],)
    assert "row 1" in p.description and "column N" in p.description


@pytest.mark.parametrize("spec, message", [
    ("any_rows", "unknown pattern 'any_rows'"),
    (42, "a pattern is a built-in name"),
    ({"shape": ["X...."] * 5}, "non-empty 'name'"),
    ({"name": "  ", "shape": ["X...."] * 5}, "non-empty 'name'"),
    ({"name": "n" * 41, "shape": ["X...."] * 5}, "longer than 40"),
    ({"name": "bad\nname", "shape": ["X...."] * 5}, "control characters"),
    ({"name": "any_row", "shape": ["X...."] * 5}, "is a built-in pattern"),
    ({"name": "k"}, "exactly one of 'shape' or 'lines'"),
    ({"name": "k", "shape": ["X...."] * 5, "lines": ["row 1", "row 2"]}, "exactly one of"),
    ({"name": "k", "shape": ["X...."] * 4}, "list of 5 strings"),
    ({"name": "k", "shape": "XXXXX"}, "list of 5 strings"),
    ({"name": "k", "shape": ["X...."] * 4 + ["X..."]}, "shape row 5 must be a string of 5"),
    ({"name": "k", "shape": ["X...."] * 4 + ["X..O."]}, "shape row 5 has 'O'"),
    ({"name": "k", "shape": ["....."] * 5}, "at least one space besides the free space"),
    ({"name": "k", "shape": [".....", ".....", "..X..", ".....", "....."]}, "besides the free"),
    ({"name": "k", "lines": ["row 1"]}, "two or more lines"),
    ({"name": "k", "lines": ["row 1", "row 9"]}, "unknown line 'row 9'"),
    ({"name": "k", "lines": ["row 1", "row 1"]}, "same line twice"),
    ({"name": "k", "lines": ["row 1", ["row 2"]]}, "unknown line ['row 2']"),
    ({"name": "k", "shape": ["X...."] * 5, "colour": "red"}, "unknown pattern field(s): colour"),
])
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(ValueError) as info:
        pattern_from_spec(spec)
    assert message in str(info.value)


def test_a_pattern_needs_arrangements_and_one_label_each():
    with pytest.raises(ValueError, match="no arrangement"):
        Pattern("empty", "nothing", (), (), "empty")
    with pytest.raises(ValueError, match="one label"):
        Pattern("odd", "odd", (frozenset({(0, 0)}),), (), "odd")


def test_cells_to_picture_marks_exactly_the_cells():
    picture = cells_to_picture(frozenset({(0, 4), (3, 1)}))
    assert sum(map(sum, picture)) == 2
    assert picture[0][4] == 1 and picture[3][1] == 1


def test_to_json_matches_the_mqtt_contract_for_a_pattern():
    # The pattern goes into `state` as is; the contract's schema is the one boards read.
    from jsonschema import Draft202012Validator

    from services.contract import BASE, _registry

    validator = Draft202012Validator({"$ref": BASE + "common.schema.json#/$defs/pattern"},
                                     registry=_registry())
    custom = [{"name": "kite", "shape": ["XX...", "XX...", "..X..", "...X.", "....X"]},
              {"name": "big T", "lines": ["row 1", "column N"]}]
    for p in [*BUILTIN_PATTERNS.values(), *map(pattern_from_spec, custom)]:
        assert list(validator.iter_errors(json.loads(json.dumps(p.to_json())))) == []
