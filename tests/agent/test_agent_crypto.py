"""API keys at rest: Fernet round trip, rotation, unreadable tokens, production without a key, the hint."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from portal.agent.crypto import ApiKeyUnreadable, api_key_decrypt, api_key_encrypt, api_key_last4

KEY = "sk-live-abcdefghijklmnop-WXYZ"


def test_round_trip_and_the_token_does_not_contain_the_key():
    with override_settings(AGENT_FERNET_KEY=Fernet.generate_key().decode()):
        token = api_key_encrypt(KEY)
        assert KEY not in token and "WXYZ" not in token
        assert api_key_decrypt(token) == KEY
    assert api_key_encrypt("") == "" and api_key_decrypt("") == ""


def test_rotation_first_key_encrypts_all_keys_decrypt():
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    with override_settings(AGENT_FERNET_KEY=old):
        token = api_key_encrypt(KEY)
    with override_settings(AGENT_FERNET_KEY=f"{new},{old}"):
        assert api_key_decrypt(token) == KEY
    with override_settings(AGENT_FERNET_KEY=new), pytest.raises(ApiKeyUnreadable):
        api_key_decrypt(token)


def test_debug_without_a_key_keeps_a_random_one_in_the_data_folder_and_production_refuses(tmp_path):
    with override_settings(AGENT_FERNET_KEY="", DEBUG=True, SECRET_KEY="a" * 50, DATA_DIR=tmp_path / "one"):
        token = api_key_encrypt(KEY)
    with override_settings(AGENT_FERNET_KEY="", DEBUG=True, SECRET_KEY="b" * 50, DATA_DIR=tmp_path / "one"):
        assert api_key_decrypt(token) == KEY  # not derived from SECRET_KEY
    with (
        override_settings(AGENT_FERNET_KEY="", DEBUG=True, SECRET_KEY="a" * 50, DATA_DIR=tmp_path / "two"),
        pytest.raises(ApiKeyUnreadable),
    ):
        api_key_decrypt(token)  # a random key per data folder
    with (
        override_settings(AGENT_FERNET_KEY="", DEBUG=False),
        pytest.raises(ImproperlyConfigured, match="AGENT_FERNET_KEY"),
    ):
        api_key_encrypt(KEY)
    with override_settings(AGENT_FERNET_KEY="not-a-fernet-key"), pytest.raises(ImproperlyConfigured):
        api_key_encrypt(KEY)


def test_last4_hides_short_keys_entirely():
    assert api_key_last4(KEY) == "WXYZ"
    assert api_key_last4("short-key") == ""
