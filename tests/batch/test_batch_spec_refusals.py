"""A RunSpec and a tasks file refuse bad input naming the field, or FILE:LINE, and the value."""

from __future__ import annotations

import unittest
from typing import Any, Dict

from agentloop.batch import RunSpec
from agentloop.batch.spec import read_specs
from agentloop.errors import RunConfigError

from tests.support.helpers import TempDir


class TestRunSpecFields(unittest.TestCase):
    def test_each_ill_typed_field_is_named_with_what_it_got(self) -> None:
        cases: Dict[str, Any] = {
            'RunSpec("a").task: must be a str, got int': dict(task=1),
            'RunSpec("a").stop_sentinel: must be None or a str, got 3': dict(stop_sentinel=3),
            'RunSpec("a").options: must be a dict, got list': dict(options=[1]),
            # the place is said once (it was said twice:
            # 'RunSpec("a").options: RunSpec("a").options.max_record_bytes: ...')
            'RunSpec("a").options.max_record_bytes: nan is not a JSON number': dict(
                options={"max_record_bytes": float("nan")}
            ),
        }
        for message, overrides in cases.items():
            fields: Dict[str, Any] = dict(name="a", task="t", max_steps=1, max_tokens=1)
            fields.update(overrides)
            with self.subTest(message), self.assertRaises(RunConfigError) as caught:
                RunSpec(**fields)
            self.assertEqual(str(caught.exception), message)

    def test_from_json_refuses_a_value_that_is_not_an_object(self) -> None:
        with self.assertRaises(RunConfigError) as caught:
            RunSpec.from_json(["a"], "tasks.jsonl:2")
        self.assertEqual(str(caught.exception), "tasks.jsonl:2: a spec is a JSON object, got list")


class TestTasksFile(TempDir):
    def test_blank_lines_are_skipped_and_specs_kept_in_order(self) -> None:
        path = self.write_bytes(
            b'\n{"name":"x","task":"t","max_steps":1,"max_tokens":2}\n'
            b'  \n{"name":"y","task":"u","max_steps":3,"max_tokens":4}\n',
            "tasks.jsonl",
        )
        self.assertEqual(read_specs(path), [RunSpec("x", "t", 1, 2), RunSpec("y", "u", 3, 4)])

    def test_a_missing_empty_or_non_json_file_is_refused_naming_file_and_line(self) -> None:
        missing = self.path("none.jsonl")
        empty = self.write_bytes(b"\n \n", "empty.jsonl")
        broken = self.write_bytes(b'{"name":"x","task":"t","max_steps":1,"max_tokens":2}\n{"name":\n', "broken.jsonl")
        latin = self.write_bytes(b'"\xe9"\n', "latin.jsonl")
        twice = self.write_bytes(b'{"name":"a","task":"x","task":"y","max_steps":4,"max_tokens":10}\n', "twice.jsonl")
        nan = self.write_bytes(b'{"name":"a","task":"x","max_steps":4,"max_tokens":NaN}\n', "nan.jsonl")
        deep = self.write_bytes(b"[" * 200000 + b"\n", "deep.jsonl")
        cases = {
            deep: "%s:1: not JSON this reader takes: nested too deeply" % (deep,),
            twice: '%s:1: not JSON: duplicate key "task"' % (twice,),
            nan: "%s:1: not JSON: NaN is not JSON" % (nan,),
            missing: "%s: cannot be read: No such file or directory" % (missing,),
            empty: "%s: holds no spec" % (empty,),
            broken: "%s:2: not JSON: Expecting value: line 1 column 9 (char 8)" % (broken,),
        }
        for path, message in cases.items():
            with self.subTest(message), self.assertRaises(RunConfigError) as caught:
                read_specs(path)
            self.assertEqual(str(caught.exception), message)
        with self.assertRaisesRegex(RunConfigError, "^%s:1: not JSON: 'utf-8' codec can't decode byte 0xe9" % (latin,)):
            read_specs(latin)


if __name__ == "__main__":
    unittest.main()
