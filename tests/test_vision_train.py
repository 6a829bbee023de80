"""Training's reproducibility guards: the pinned vector paths, and calibration tied to its weights."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from vision.classify import WEIGHTS, load_model, second_weights
from vision.reader import CALIBRATION, BallReader, Calibration
from vision.train import pinned_env

PROBE = """
import json, numpy as np, cv2
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
a = np.ones((64, 64), np.float32); a @ a
print(json.dumps({"numpy_on": [f for f in __cpu_dispatch__ if __cpu_features__.get(f)],
                  "opencv": cv2.getCPUFeaturesLine(), "ipp": cv2.ipp.getIppVersion(),
                  "avx2": bool(__cpu_features__.get("AVX2"))}))
"""


def test_training_process_runs_with_every_dispatched_vector_path_off():
    env = {**os.environ, **pinned_env(), "OPENBLAS_VERBOSE": "2"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    probe = json.loads(out.stdout)
    assert probe["numpy_on"] == []
    # Every feature OpenCV dispatches to is marked unavailable ("?") in the pinned process.
    dispatched = [f for f in probe["opencv"].split() if f.startswith("*")]
    assert dispatched and all(f.endswith("?") for f in dispatched), probe["opencv"]
    assert "Core: Nehalem" in out.stderr
    # IPP runs its AVX2 code, not the AVX-512 code it would pick on such a CPU.
    if probe["avx2"]:
        assert "AVX2 (l9)" in probe["ipp"], probe["ipp"]


def test_committed_calibration_was_fitted_for_the_committed_weights():
    with np.load(CALIBRATION) as z:
        assert "weights_sha256" in z.files
    assert Calibration.load().accept > 0


def test_a_calibration_fitted_for_other_weights_is_refused(tmp_path):
    # Same network, one weight changed: the accept level no longer means anything.
    model = load_model(str(WEIGHTS))
    w0 = model.layers[0][0].copy()
    w0[0, 0] += 0.5
    other = type(model)({"mean": model.mean, "std": model.std, "w0": w0, "b0": model.layers[0][1],
                         "w1": model.layers[1][0], "b1": model.layers[1][1]})
    other.save(tmp_path / "glyphs.npz")
    shutil.copy(second_weights(WEIGHTS), second_weights(tmp_path / "glyphs.npz"))
    shutil.copy(CALIBRATION, tmp_path / "calibration.npz")
    with pytest.raises(ValueError, match="other glyph weights"):
        Calibration.load(tmp_path / "calibration.npz", weights=tmp_path / "glyphs.npz")
    with pytest.raises(ValueError, match="recalibrate"):
        BallReader(weights=str(tmp_path / "glyphs.npz"))
    assert Calibration.load(tmp_path / "calibration.npz", weights=WEIGHTS).accept > 0


def test_a_calibration_is_refused_when_only_the_second_classifier_changed(tmp_path):
    shutil.copy(WEIGHTS, tmp_path / "glyphs.npz")
    shutil.copy(CALIBRATION, tmp_path / "calibration.npz")
    load_model(str(WEIGHTS)).save(second_weights(tmp_path / "glyphs.npz"))     # the first one twice
    with pytest.raises(ValueError, match="other glyph weights"):
        Calibration.load(tmp_path / "calibration.npz", weights=tmp_path / "glyphs.npz")


def test_worst_wrong_lists_the_wrong_calibration_readings_by_evidence_with_their_frames():
    from vision.train import CALIB_COLUMNS, worst_wrong
    rows = np.array([
        # evidence, right, ink visible, posterior, seed, k, truth, read, first classifier's evidence
        (0.90, 1, 0.9, 0.99, 507919, 3, 5, 5, 0.90),
        (0.12, 0, 0.6, 0.80, 507925, 7, 3, 2, 0.12),
        (0.10, 0, 0.7, 0.94, 507930, 41, 67, 62, 0.26),
        (0.05, 0, 0.3, 0.50, 507931, 2, 16, 21, 0.05),
    ])
    assert rows.shape[1] == len(CALIB_COLUMNS)
    lines = worst_wrong(rows, n=2)
    assert len(lines) == 2
    assert "O67 read O62" in lines[0] and "evidence 0.2600 (seconded 0.1000)" in lines[0] and "frame 507930:41" in lines[0]
    assert "B3 read B2" in lines[1] and "frame 507925:7" in lines[1]
    assert not any("B5" in line for line in lines)


def test_a_listed_calibration_frame_can_be_drawn_again():
    from vision.train import calibration_frame
    number, frame = calibration_frame("507925:32")
    # The B3 whose lower half the lip hides (docs/vision.md, 5 December, noon).
    assert number == 3 and frame.shape == (480, 640, 3)


@pytest.mark.parametrize("where", ["12", "5:-1", "a:b"])
def test_show_refuses_what_is_not_a_calibration_frame(where, capsys):
    from vision.train import main
    with pytest.raises(SystemExit) as e:
        main(["--show", where])
    assert e.value.code == 2
    assert "--show takes SEED:K" in capsys.readouterr().err


def test_calib_only_without_weights_to_recalibrate_says_so(tmp_path, capsys, monkeypatch):
    from vision.train import main
    monkeypatch.setenv("BALLREADER_TRAIN_PINNED", "1")    # stay in this process (no restart under the pin)
    with pytest.raises(SystemExit) as e:
        main(["--calib-only", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert "glyphs.npz does not exist" in capsys.readouterr().err
