"""The speed comparison loads another revision's reader beside the working tree's."""
import sys

from vision import bench_speed
from vision.reader import BallReader


def test_the_base_revision_is_its_own_package_and_both_readers_take_turns(capsys):
    bench_speed.main(["--base", "HEAD", "--render", "4", "--dev", "0", "--rounds", "1"])
    out = capsys.readouterr().out
    base = sys.modules["vision_base.reader"].BallReader
    assert base is not BallReader and base.__module__ == "vision_base.reader"
    assert "4 frames x 1 rounds" in out and "readings (ball, confidence, reason) that differ:" in out
