"""SCITT signed statements of a batch ledger's checkpoint (agentloop.provenance.scitt), against hand-made bytes.

The statement of a ledger is the statement of a transcript with another
payload: the ledger's checkpoint (``agentloop-manifest/1/<spec hash>``, the
line count, the RFC 6962 root of the lines, a blank line), unsigned; its
subject the batch's origin.  The expected payload is written here from
the ledger's bytes with the RFC 6962 oracle of tests/batch/test_batch.py.
"""

from __future__ import annotations

import base64
import os

from agentloop.batch import RunSpec, run_many
from agentloop.batch.ledger import ManifestCheckpoint, make_checkpoint
from agentloop.errors import BadSignatureError, ProvenanceError
from agentloop.provenance.cose import parse_sign1, sign1
from agentloop.provenance.runs import checked_ledger, is_ledger
from agentloop.provenance.scitt import (
    check_ledger_statement,
    check_statement,
    make_statement,
    sign_statement,
    statement_checkpoint,
)
from agentloop.transcript.checkpoint import Checkpoint, parse_checkpoint, sign_checkpoint

from tests.batch.test_batch import naive_root
from tests.provenance.test_formats import VALID, Case, bstr, text_head

ISSUER = "https://operator.example.com"


class LedgerCase(Case):
    def setUp(self) -> None:
        super().setUp()
        self.out = self.path("out")
        specs = [RunSpec("a", "one", 5, 10000), RunSpec("b", "three", 1, 10000), RunSpec("c", "seven", 5, 10000)]
        run_many(
            specs,
            model="tests.support.batch_models:factory",
            tools="tests.support.batch_models:tools",
            out_dir=self.out,
            checkpoint=os.path.join(self.out, "manifest.checkpoint"),
        )
        self.manifest = os.path.join(self.out, "manifest.jsonl")
        with open(self.manifest, "rb") as handle:
            self.ledger = handle.read()
        with open(os.path.join(self.out, "manifest.checkpoint"), encoding="utf-8") as handle:
            self.origin = handle.readline().rstrip("\n")

    def rewrite(self, data: bytes) -> None:
        with open(self.manifest, "wb") as handle:
            handle.write(data)


class TestLedgerStatement(LedgerCase):
    def test_the_statement_against_hand_made_bytes(self) -> None:
        data = make_statement(self.manifest, self.key, ISSUER)
        message = parse_sign1(data)
        content_type = "text/plain; charset=utf-8"
        protected = (
            b"\xa4\x01\x27\x03"
            + text_head(content_type)
            + content_type.encode()
            + b"\x04"
            + bstr(self.kid)
            + b"\x0f\xa2\x01"
            + text_head(ISSUER)
            + ISSUER.encode()
            + b"\x02"
            + text_head(self.origin)
            + self.origin.encode()
        )
        self.assertEqual(message.protected_bytes, protected)
        self.assertEqual(message.unprotected, {})
        note = "%s\n3\n%s\n\n" % (self.origin, base64.b64encode(naive_root(self.ledger.splitlines())).decode())
        self.assertEqual(message.payload, note.encode())
        checked = check_statement(data, [self.verifier], ISSUER)
        self.assertIsInstance(checked.checkpoint, ManifestCheckpoint)
        self.assertEqual(
            (checked.signer, checked.issuer, checked.subject, checked.checkpoint.size),
            (self.key.name, ISSUER, self.origin, 3),
        )
        self.assertEqual(check_ledger_statement(checked, self.manifest), make_checkpoint(self.origin, self.ledger))

    def test_one_code_path_the_kind_switch(self) -> None:
        self.assertTrue(is_ledger(self.manifest))
        self.assertFalse(is_ledger(VALID))
        self.assertIsInstance(statement_checkpoint(self.manifest), ManifestCheckpoint)
        self.assertIsInstance(statement_checkpoint(VALID), Checkpoint)
        ledger = checked_ledger(self.manifest).checkpoint
        self.assertEqual(ledger.signatures, ())
        self.assertEqual(sign_statement(ledger, self.key, ISSUER), make_statement(self.manifest, self.key, ISSUER))
        signed = make_checkpoint(self.origin, self.ledger, key=b"k" * 32)
        with self.assertRaisesRegex(ProvenanceError, "carries signatures"):
            sign_statement(signed, self.key, ISSUER)

    def test_every_changed_byte_of_the_statement_is_refused(self) -> None:
        data = make_statement(self.manifest, self.key, ISSUER)
        for at in range(len(data)):
            changed = data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]
            with self.subTest(at=at):
                with self.assertRaises((ProvenanceError, BadSignatureError)):
                    check_ledger_statement(check_statement(changed, [self.verifier], ISSUER), self.manifest)

    def test_every_changed_byte_of_the_ledger_is_refused(self) -> None:
        checked = check_statement(make_statement(self.manifest, self.key, ISSUER), [self.verifier])
        for at in range(len(self.ledger)):
            changed = self.ledger[:at] + bytes([self.ledger[at] ^ 1]) + self.ledger[at + 1 :]
            self.rewrite(changed)
            with self.subTest(at=at):
                with self.assertRaises(ProvenanceError) as caught:
                    check_ledger_statement(checked, self.manifest)
                self.assertRegex(
                    str(caught.exception),
                    r"^(manifest .*manifest\.jsonl: manifest line \d+: |signed statement: .*manifest\.jsonl is not the "
                    r"ledger of its checkpoint: |signed statement: is of a batch ledger .* is not a ledger)",
                )

    def test_a_ledger_that_grew_or_shrank_is_not_the_statements(self) -> None:
        checked = check_statement(make_statement(self.manifest, self.key, ISSUER), [self.verifier])
        self.rewrite(b"".join(self.ledger.splitlines(keepends=True)[:2]))
        with self.assertRaisesRegex(
            ProvenanceError, "is not the ledger of its checkpoint: the checkpoint covers 3 lines; the manifest has 2"
        ):
            check_ledger_statement(checked, self.manifest)

    def test_a_statement_of_one_kind_is_not_checked_against_the_other(self) -> None:
        ledger = check_statement(make_statement(self.manifest, self.key, ISSUER), [self.verifier])
        with self.assertRaisesRegex(
            ProvenanceError,
            "^signed statement: is of a batch ledger \\(subject agentloop-manifest/1/[0-9a-f]{64}\\), "
            "and .*valid.jsonl is not a ledger: give the batch's manifest.jsonl$",
        ):
            check_ledger_statement(ledger, VALID)
        run = check_statement(make_statement(VALID, self.key, ISSUER), [self.verifier])
        with self.assertRaisesRegex(
            ProvenanceError,
            "^signed statement: is of a run's transcript \\(subject agentloop/1/[0-9a-f]{64}\\), not of the batch "
            "ledger .*manifest.jsonl: give the run's transcript$",
        ):
            check_ledger_statement(run, self.manifest)

    def test_nothing_is_signed_that_was_not_checked(self) -> None:
        lines = self.ledger.splitlines(keepends=True)
        self.rewrite(self.ledger + lines[0])  # a line more than its checkpoint: rule 4 refuses the repeated ok line
        with self.assertRaisesRegex(ProvenanceError, 'manifest line 4: the name "a" appears again after its ok line'):
            make_statement(self.manifest, self.key, ISSUER)
        self.rewrite(b"".join(lines[:2]))
        with self.assertRaisesRegex(
            ProvenanceError, "the ledger's checkpoint .*manifest.checkpoint: the checkpoint covers 3 lines"
        ):
            make_statement(self.manifest, self.key, ISSUER)
        self.rewrite(self.ledger)
        os.remove(os.path.join(self.out, "manifest.checkpoint"))
        with self.assertRaisesRegex(ProvenanceError, "the ledger's checkpoint .*manifest.checkpoint: cannot be read"):
            make_statement(self.manifest, self.key, ISSUER)

    def test_the_transcripts_are_not_read(self) -> None:
        os.remove(os.path.join(self.out, "b.jsonl"))
        checked = check_statement(make_statement(self.manifest, self.key, ISSUER), [self.verifier])
        self.assertEqual(check_ledger_statement(checked, self.manifest).size, 3)

    def test_a_ledger_payload_whose_origin_is_not_the_subject(self) -> None:
        good = parse_sign1(make_statement(self.manifest, self.key, ISSUER))
        protected = dict(good.protected)
        forged = {**protected, 15: {1: ISSUER, 2: "agentloop-manifest/1/" + "0" * 64}}
        with self.assertRaisesRegex(ProvenanceError, "claim 2 \\(sub\\): is not the checkpoint's origin"):
            check_statement(sign1(forged, {}, good.payload or b"", self.key), [self.verifier])
        broken = (good.payload or b"").replace(b"\n3\n", b"\n03\n")
        with self.assertRaisesRegex(ProvenanceError, "payload: is not a checkpoint: checkpoint line 2: size must be"):
            check_statement(sign1(protected, {}, broken, self.key), [self.verifier])

    def test_a_statement_over_a_ledger_that_does_not_parse_is_refused(self) -> None:
        # signed by a trusted key over the right root, but of a ledger no batch writes: the ledger is refused
        bad = self.ledger.replace(b'{"head"', b'{ "head"', 1)
        statement = sign_statement(make_checkpoint(self.origin, bad), self.key, ISSUER)
        self.rewrite(bad)
        with self.assertRaisesRegex(ProvenanceError, "manifest line 1: not in RFC 8785 canonical form"):
            check_ledger_statement(check_statement(statement, [self.verifier]), self.manifest)

    def test_a_payload_that_carries_signature_lines_is_refused(self) -> None:
        # sign_statement never makes one (the payload is the unsigned tree head): check_statement takes no other
        signed = make_checkpoint(self.origin, self.ledger, key=b"k" * 32)
        protected = dict(parse_sign1(make_statement(self.manifest, self.key, ISSUER)).protected)
        with self.assertRaisesRegex(
            ProvenanceError, "^signed statement payload: carries signature lines: a statement's payload is the unsigned"
        ):
            check_statement(sign1(protected, {}, signed.to_bytes(), self.key), [self.verifier])
        run = parse_sign1(make_statement(VALID, self.key, ISSUER))
        signed_run = sign_checkpoint(parse_checkpoint(run.payload or b""), signers=self.key).to_bytes()
        with self.assertRaisesRegex(ProvenanceError, "^signed statement payload: carries signature lines"):
            check_statement(sign1(run.protected, {}, signed_run, self.key), [self.verifier])


class TestTheStatingKeysOwnSignature(LedgerCase):
    """A ledger checkpoint that carries a signature line by the stating key: it must verify before that key states it.

    The batch's origin (the subject) is read off the checkpoint; an origin changed under the operator's own
    signature line would otherwise be stated by the very key that line claims signed something else.
    """

    def write_checkpoint(self, origin: str) -> None:
        signed = make_checkpoint(self.origin, self.ledger, signers=[self.key])
        forged = ManifestCheckpoint(origin, signed.size, signed.root, signed.signatures)
        with open(os.path.join(self.out, "manifest.checkpoint"), "wb") as handle:
            handle.write(forged.to_bytes())

    def test_a_checkpoint_signed_by_the_stating_key_is_stated(self) -> None:
        self.write_checkpoint(self.origin)
        checked = check_statement(make_statement(self.manifest, self.key, ISSUER), [self.verifier], ISSUER)
        self.assertEqual(checked.subject, self.origin)

    def test_an_origin_changed_under_the_stating_keys_signature_is_refused(self) -> None:
        self.write_checkpoint("agentloop-manifest/1/" + "f" * 64)
        with self.assertRaisesRegex(ProvenanceError, "the ledger's checkpoint .*invalid signature for key"):
            make_statement(self.manifest, self.key, ISSUER)
