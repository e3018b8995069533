"""The CLI's contract: exit codes 0/1/2, --help everywhere, JSON with provenance."""
import json


def test_info_json_has_provenance(lgreco):
    p = lgreco("info", "--format", "json", check=True)
    doc = json.loads(p.stdout)
    assert doc["schema_version"] == 1
    assert doc["provenance"]["tool"] == "lgreco"
    assert isinstance(doc["provenance"]["cuda"], bool)


def test_unknown_flag_is_usage_error(lgreco):
    p = lgreco("info", "--no-such-flag")
    assert p.returncode == 2
    assert "unknown option '--no-such-flag'" in p.stderr


def test_unknown_command_is_usage_error(lgreco):
    p = lgreco("no-such-command")
    assert p.returncode == 2


def test_every_command_has_help(lgreco):
    names = lgreco("--list-commands", check=True).stdout.splitlines()
    assert "info" in names
    for name in names:
        p = lgreco(*name.split(), "--help")
        assert p.returncode == 0, (name, p.stderr)
        assert p.stdout.startswith("usage: lgreco " + name), (name, p.stdout[:80])
