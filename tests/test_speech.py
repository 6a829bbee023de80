"""Spoken calls: our words, real espeak-ng audio written to WAV files, a queue that never blocks."""
from __future__ import annotations

import array
import subprocess
import threading
import wave

import pytest

from services.speech import Speaker, SpeechConfig, call_text, number_words
from vision.balls import ALL_NUMBERS, letter_for


def call(seq, number, event_type="called", **extra):
    letter = letter_for(number)
    return {"seq": seq, "game": 1, "index": seq, "ball": f"{letter}{number}", "letter": letter,
            "number": number, "confidence": 1.0, "source": "camera", "ts": "2026-12-02T19:00:00Z",
            "event_type": event_type, **extra}


def test_number_words():
    assert [number_words(n) for n in (1, 12, 19, 20, 21, 40, 45, 70, 75)] == [
        "one", "twelve", "nineteen", "twenty", "twenty-one", "forty", "forty-five", "seventy", "seventy-five"]
    # Every ball has its own words.
    assert len({number_words(n) for n in ALL_NUMBERS}) == 75
    with pytest.raises(ValueError):
        number_words(80)


def test_call_text():
    assert call_text(call(1, 12)) == "B, twelve"
    assert call_text(call(2, 75)) == "O, seventy-five"
    assert call_text(call(3, 12, event_type="voided", voids_seq=1)) == "Correction. B, twelve, is void."


def read_wav(path):
    with wave.open(str(path)) as w:
        frames = w.readframes(w.getnframes())
        return w.getnframes() / w.getframerate(), w.getsampwidth(), array.array("h", frames)


def test_calls_are_spoken_to_wav_files_as_real_audio(tmp_path):
    speaker = Speaker(SpeechConfig(enabled=True, wav_dir=tmp_path))
    try:
        speaker.on_call(call(1, 12))
        speaker.on_call(call(2, 75))
        speaker.on_call(call(2, 75))  # a QoS 1 repeat is not said twice
        speaker.flush()
    finally:
        speaker.close()
    assert speaker.last_error is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1-B12.wav", "2-O75.wav"]
    for name in ("1-B12.wav", "2-O75.wav"):
        seconds, width, samples = read_wav(tmp_path / name)
        assert width == 2
        assert 0.5 < seconds < 10  # a few words, not an empty file
        assert max(abs(s) for s in samples) > 2000  # sound, not silence
    # "O, seventy-five" is more to say than "B, twelve".
    assert read_wav(tmp_path / "2-O75.wav")[0] > read_wav(tmp_path / "1-B12.wav")[0]


def test_on_call_returns_while_the_speaker_is_still_busy():
    # The sound output is the hardware edge: a runner that holds until released stands in for it.
    release = threading.Event()
    said = []

    def slow_speaker(args, **kw):
        release.wait(10)
        said.append(args[-1])
        return subprocess.CompletedProcess(args, 0)

    speaker = Speaker(SpeechConfig(enabled=True, repeat=2), run=slow_speaker)
    try:
        for seq, number in enumerate((5, 33, 61), start=1):
            speaker.on_call(call(seq, number))  # returns although nothing has been spoken yet
        assert said == []
        release.set()
        speaker.flush()
    finally:
        speaker.close()
    assert said == ["B, five", "B, five", "N, thirty-three", "N, thirty-three", "O, sixty-one", "O, sixty-one"]


def test_a_missing_speech_program_is_reported_and_later_calls_still_spoken(tmp_path):
    faults = []
    speaker = Speaker(SpeechConfig(enabled=True, command=str(tmp_path / "no-espeak"), wav_dir=tmp_path),
                      on_fault=faults.append)
    try:
        speaker.on_call(call(1, 12))
        speaker.on_call(call(2, 14))
        speaker.flush()
        assert "cannot speak 'B, fourteen'" in speaker.last_error
        assert len(faults) == 1 and "cannot speak 'B, twelve'" in faults[0]  # reported once
        speaker.config = SpeechConfig(enabled=True, wav_dir=tmp_path)
        speaker.on_call(call(3, 13))
        speaker.flush()
    finally:
        speaker.close()
    assert speaker.last_error is None and faults[-1] is None
    assert (tmp_path / "3-B13.wav").stat().st_size > 1000


def test_calls_and_voids_from_the_real_engine_are_spoken(tmp_path):
    from services.engine import DrawEngine
    from services.record import Record

    wavs = tmp_path / "wav"
    wavs.mkdir()
    speaker = Speaker(SpeechConfig(enabled=True, wav_dir=wavs))
    record = Record(tmp_path / "record.db")
    engine = DrawEngine(record, on_call=lambda call: speaker.observe("call", call))
    try:
        engine.new_occasion()
        engine.new_game("any_line", all_balls_in_blower=True)
        first = engine.manual_call(12)
        engine.manual_call(75)
        engine.void(first["seq"], reason="dropped")
        speaker.flush()
    finally:
        speaker.close()
        record.close()
    assert sorted(p.name for p in wavs.iterdir()) == ["1-B12.wav", "2-O75.wav", "3-B12.wav"]
    # The void says more ("Correction. B, twelve, is void.") than the call did.
    assert read_wav(wavs / "3-B12.wav")[0] > read_wav(wavs / "1-B12.wav")[0] + 0.5
