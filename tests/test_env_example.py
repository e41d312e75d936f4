"""`.env.example` documents every setting and is a valid env file as it stands."""

from __future__ import annotations

import re
from pathlib import Path

from mnemobot.config.settings import ENV_FILE_VARIABLE, Settings

EXAMPLE = Path(__file__).resolve().parent.parent / ".env.example"


def test_every_setting_is_documented_in_env_example() -> None:
    text = EXAMPLE.read_text()
    documented = set(re.findall(r"^# ([A-Z][A-Z0-9_]+)=", text, flags=re.MULTILINE))
    variables = {name.upper() for name in Settings.model_fields}
    assert documented == variables
    assert ENV_FILE_VARIABLE in text
    # As shipped it changes nothing: every value is a commented example.
    assert Settings(_env_file=EXAMPLE) == Settings(_env_file=None)  # type: ignore[call-arg]
