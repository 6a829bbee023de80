"""Card faces, CSV import, winner checks and prize splits."""
import pytest

from services.cards import Card, card_grid, check_card, parse_cards_csv, split_prize
from services.patterns import pattern_from_spec

# Column order: B rows 1-5, I rows 1-5, N rows 1,2,4,5, G rows 1-5, O rows 1-5.
NUMBERS = (1, 2, 3, 4, 5, 16, 17, 18, 19, 20, 31, 32, 34, 35,
           46, 47, 48, 49, 50, 61, 62, 63, 64, 65)
CARD = Card("A-0001", NUMBERS)


def csv_row(serial: str, numbers=NUMBERS) -> str:
    return ",".join([serial, *map(str, numbers)])


# --- the face ------------------------------------------------------------------

def test_grid_puts_numbers_column_by_column_around_the_free_centre():
    assert card_grid(CARD) == [
        [1, 16, 31, 46, 61],
        [2, 17, 32, 47, 62],
        [3, 18, None, 48, 63],
        [4, 19, 34, 49, 64],
        [5, 20, 35, 50, 65],
    ]


def test_numbers_given_as_a_list_are_kept_as_a_tuple():
    assert Card("L", list(NUMBERS)).numbers == NUMBERS


@pytest.mark.parametrize("numbers, message", [
    (NUMBERS[:-1], "23 numbers, expected 24"),
    (NUMBERS + (66,), "25 numbers, expected 24"),
    ((16,) + NUMBERS[1:], "16 cannot be in column B (row 1); column B holds 1-15"),
    (NUMBERS[:10] + (30,) + NUMBERS[11:], "30 cannot be in column N (row 1)"),
    (NUMBERS[:23] + (76,), "76 cannot be in column O (row 5)"),
    ((0,) + NUMBERS[1:], "0 cannot be in column B"),
    ((1, 1) + NUMBERS[2:], "number(s) 1 appear twice"),  # DE 4.30.1.2: such a face is void
    (("1",) + NUMBERS[1:], "'1' is not a whole number"),
    ((True,) + NUMBERS[1:], "True is not a whole number"),
    ((1.0,) + NUMBERS[1:], "1.0 is not a whole number"),
])
def test_bad_faces_are_refused(numbers, message):
    with pytest.raises(ValueError) as info:
        Card("X-1", numbers)
    assert message in str(info.value)
    assert "X-1" in str(info.value)


@pytest.mark.parametrize("serial", ["", "   ", "a\tb", "s" * 65])
def test_bad_serials_are_refused(serial):
    with pytest.raises(ValueError, match="serial"):
        Card(serial, NUMBERS)


def test_numbers_within_a_column_may_come_in_any_order():
    shuffled = (5, 3, 1, 4, 2) + NUMBERS[5:]
    assert card_grid(Card("S", shuffled))[0][0] == 5


# --- CSV import -------------------------------------------------------------------

def test_csv_without_header():
    cards = parse_cards_csv(csv_row("A-0001") + "\n" + csv_row("A-0002") + "\n")
    assert [c.serial for c in cards] == ["A-0001", "A-0002"]
    assert cards[0] == CARD


def test_csv_with_header_blank_lines_comments_spaces_and_crlf():
    header = "serial," + ",".join(f"{l}{i}" for l in "BINGO" for i in range(1, 6) if (l, i) != ("N", 3))
    text = "\r\n".join([
        header,
        "",
        "# printed 2026-11-30",
        " A-0001 , " + " , ".join(map(str, NUMBERS)),
        '"A,0002",' + ",".join(map(str, NUMBERS)),
    ]) + "\r\n"
    cards = parse_cards_csv(text)
    assert [c.serial for c in cards] == ["A-0001", "A,0002"]
    assert cards[0].numbers == NUMBERS


@pytest.mark.parametrize("centre", ["FREE", "free", "*", "0", ""])
def test_csv_with_25_cells_and_a_free_centre(centre):
    cells = [*map(str, NUMBERS[:12]), centre, *map(str, NUMBERS[12:])]
    [card] = parse_cards_csv("F-1," + ",".join(cells))
    assert card.numbers == NUMBERS


@pytest.mark.parametrize("separator", [";", "\t"])
def test_csv_with_semicolons_or_tabs(separator):
    text = separator.join(["A-0001", *map(str, NUMBERS)]) + "\n"
    assert parse_cards_csv(text) == [CARD]


def test_csv_file_written_by_a_spreadsheet_with_a_bom(tmp_path):
    path = tmp_path / "cards.csv"
    path.write_text(csv_row("A-0001") + "\r\n" + csv_row("A-0002") + "\r\n", encoding="utf-8-sig")
    cards = parse_cards_csv(path.read_text(encoding="utf-8"))
    assert [c.serial for c in cards] == ["A-0001", "A-0002"]


@pytest.mark.parametrize("bad_row, message", [
    (csv_row("B-2", NUMBERS[:-1]), "line 2: 23 numbers after the serial, expected 24"),
    ("B-2," + ",".join([*map(str, NUMBERS[:12]), "33", *map(str, NUMBERS[12:])]),
     "line 2: 25 cells given but the centre cell is '33'"),
    ("B-2," + ",".join(["x1", *map(str, NUMBERS[1:])]), "line 2: number 1 is 'x1'"),
    (csv_row("B-2", NUMBERS[:23] + (15,)), "line 2: card B-2: 15 cannot be in column O"),
    (csv_row("B-2", (2, 2) + NUMBERS[2:]), "line 2: card B-2: number(s) 2 appear twice"),
    (csv_row("A-0001"), "line 2: serial 'A-0001' already used on line 1"),
    (csv_row(""), "line 2: the serial is empty"),
])
def test_a_bad_row_names_its_line_and_problem(bad_row, message):
    with pytest.raises(ValueError) as info:
        parse_cards_csv(csv_row("A-0001") + "\n" + bad_row + "\n")
    assert message in str(info.value)


def test_a_bad_first_row_is_not_mistaken_for_a_header():
    # It has numbers after the serial, so it is a card row and its fault is reported.
    with pytest.raises(ValueError, match="line 1: 23 numbers"):
        parse_cards_csv(csv_row("A-1", NUMBERS[:-1]))


@pytest.mark.parametrize("text", ["", "\n\n", "serial,b1,b2\n", "# only a comment\n"])
def test_a_file_without_cards_is_refused(text):
    with pytest.raises(ValueError, match="no card rows"):
        parse_cards_csv(text)


# --- winner checks ------------------------------------------------------------------

def check(calls, pattern="any_line", card=CARD):
    return check_card(card, list(calls), pattern_from_spec(pattern))


def test_not_a_winner_until_the_pattern_is_covered():
    result = check([1, 16, 31, 46, 75])  # row 1 missing 61
    assert not result.winner
    assert result.arrangement is None and result.arrangement_name is None
    assert result.won_at_index is None and result.won_on_number is None
    assert result.calls_checked == 5


def test_no_calls_no_winner():
    assert not check([], "four_corners").winner


def test_row_win_names_the_row_and_the_completing_call():
    result = check([61, 7, 1, 16, 31, 46, 22])
    assert result.winner
    assert result.arrangement_name == "row 1"
    assert result.arrangement == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)]
    assert result.won_at_index == 6
    assert result.won_on_number == 46
    assert result.calls_checked == 7


def test_the_middle_row_needs_only_four_numbers_thanks_to_the_free_space():
    result = check([3, 18, 48, 63], "any_row")
    assert (result.winner, result.arrangement_name, result.won_at_index) == (True, "row 3", 4)


def test_column_n_and_a_diagonal_use_the_free_space():
    assert check([31, 32, 34, 35], "any_column").arrangement_name == "column N"
    result = check([1, 17, 49, 65], "any_diagonal")
    assert result.winner
    assert result.arrangement_name == "diagonal top-left to bottom-right"
    assert check([61, 47, 19, 5], "any_diagonal").arrangement_name == \
        "diagonal top-right to bottom-left"


def test_a_pattern_only_counts_its_own_kind_of_line():
    row_1 = [1, 16, 31, 46, 61]
    assert check(row_1, "any_row").winner
    assert not check(row_1, "any_column").winner
    assert not check(row_1, "any_diagonal").winner


def test_the_earliest_completed_arrangement_is_reported():
    # Column B completes on call 5; row 1 only on call 9, although both are covered.
    calls = [1, 2, 3, 4, 5, 16, 31, 46, 61]
    result = check(calls)
    assert (result.arrangement_name, result.won_at_index, result.won_on_number) == ("column B", 5, 5)


def test_a_late_claim_is_told_apart_from_a_win_on_the_last_call():
    calls = [1, 16, 31, 46, 61, 70, 72]
    late = check(calls)
    assert late.winner and late.won_at_index == 5 and not late.won_on_last_call
    on_time = check(calls[:5])
    assert on_time.winner and on_time.won_on_last_call


def test_four_corners_and_around_the_free_space():
    assert check([1, 5, 61, 65], "four_corners").won_at_index == 4
    assert not check([1, 5, 61], "four_corners").winner
    around = [17, 32, 47, 18, 48, 19, 34, 49]
    assert check(around, "around_free").arrangement_name == "eight around the free space"
    assert not check(around[:-1], "around_free").winner


def test_full_card_wins_on_its_last_number():
    calls = list(reversed(NUMBERS)) + [75]
    result = check(calls, "full_card")
    assert result.winner and result.won_at_index == 24 and result.won_on_number == 1
    assert len(result.arrangement) == 25
    assert not check(calls[1:], "full_card").winner


def test_named_combinations_and_two_lines():
    diagonals = [1, 17, 49, 65, 61, 47, 19, 5]
    assert check(diagonals, "letter_x").won_at_index == 8
    assert not check(diagonals[:-1], "letter_x").winner
    two = check([1, 16, 31, 46, 61, 3, 18, 48, 63], "two_lines")
    assert two.winner and two.arrangement_name == "row 1 + row 3" and two.won_at_index == 9
    assert not check([1, 16, 31, 46, 61], "two_lines").winner


def test_custom_shape():
    kite = pattern_from_spec({"name": "kite", "shape": ["XX...", "XX...", "..X..", "...X.", "....X"]})
    result = check_card(CARD, [1, 16, 2, 17, 49, 65], kite)
    assert (result.winner, result.arrangement_name, result.won_at_index) == (True, "kite", 6)
    assert not check_card(CARD, [1, 16, 2, 17, 49], kite).winner


def test_a_repeated_number_counts_at_its_first_call():
    result = check([1, 16, 31, 46, 61, 61])
    assert result.won_at_index == 5


@pytest.mark.parametrize("bad", [0, 76, "12", None, True])
def test_calls_must_be_ball_numbers(bad):
    with pytest.raises(ValueError, match="call 2 is not a ball number"):
        check([1, bad])


def test_to_json():
    assert check([1, 5, 61, 65], "four_corners").to_json() == {
        "winner": True,
        "arrangement": [[0, 0], [0, 4], [4, 0], [4, 4]],
        "arrangement_name": "four corners",
        "won_at_index": 4,
        "won_on_number": 65,
        "calls_checked": 4,
    }
    assert check([], "four_corners").to_json()["arrangement"] is None


# --- prize split (DE 4.11, MO (3)) ------------------------------------------------------

def test_split_examples():
    assert split_prize(10000, 3) == [3334, 3333, 3333]
    assert split_prize(10000, 4) == [2500] * 4
    assert split_prize(5, 1) == [5]
    assert split_prize(2, 3) == [1, 1, 0]
    assert split_prize(0, 2) == [0, 0]


def test_split_sums_exactly_and_differs_by_at_most_a_cent():
    for amount in range(0, 1200, 7):
        for winners in range(1, 14):
            shares = split_prize(amount, winners)
            assert len(shares) == winners
            assert sum(shares) == amount
            assert max(shares) - min(shares) <= 1


@pytest.mark.parametrize("amount, winners, message", [
    (-1, 2, "must not be negative"),
    (100, 0, "at least 1"),
    (100.0, 2, "amount_cents must be a whole number"),
    (100, True, "winners must be a whole number"),
])
def test_split_refuses_bad_input(amount, winners, message):
    with pytest.raises(ValueError, match=message):
        split_prize(amount, winners)
