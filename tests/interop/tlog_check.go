// tlog_check: an independent check of agentloop's C2SP tlog artefacts, for .ci/interop-tlog.
//
// It shares no code with agentloop: the tlog-proof file is split by the
// rules of c2sp.org/tlog-proof ("Format") written here, the checkpoint is
// opened by Go's golang.org/x/mod/sumdb/note, the inclusion and consistency
// proofs are checked by golang.org/x/mod/sumdb/tlog (RFC 6962 hashing), and
// witness cosignatures (c2sp.org/tlog-cosignature, cosignature/v1) by a
// note.Verifier written here on crypto/ed25519.
//
//	tlog_check proof FILE.tlog-proof VKEY...        the four verification steps; every VKEY must have signed
//	tlog_check tamper FILE.tlog-proof VKEY...       every one-byte change of FILE must be refused
//	tlog_check request REQUEST OLD_CKPT VKEY...     an add-checkpoint body: its checkpoint opens, its proof is consistent
//	tlog_check cosigned CKPT VKEY...                a checkpoint every VKEY signed (log key and witness keys)
//
// Exit status 0 when every check holds, 1 otherwise.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// cosigV1 is a cosignature/v1 verifier (signature type 0x04).
type cosigV1 struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosigV1) Name() string    { return v.name }
func (v *cosigV1) KeyHash() uint32 { return v.hash }
func (v *cosigV1) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	if t == 0 || t > 1<<63-1 {
		return false
	}
	m := append([]byte(fmt.Sprintf("cosignature/v1\ntime %d\n", t)), msg...)
	return ed25519.Verify(v.key, m, sig[8:])
}

// verifier reads a vkey: type 0x01 through note.NewVerifier, type 0x04 here.
func verifier(path string) (note.Verifier, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vkey := strings.TrimSpace(string(raw))
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("%s: not a vkey", path)
	}
	key, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(key) != 1+ed25519.PublicKeySize {
		return nil, fmt.Errorf("%s: bad key material", path)
	}
	if key[0] != 0x04 {
		return note.NewVerifier(vkey)
	}
	h := sha256.Sum256(append([]byte(parts[0]+"\n"), key...))
	id := binary.BigEndian.Uint32(h[:4])
	if fmt.Sprintf("%08x", id) != parts[1] {
		return nil, fmt.Errorf("%s: key ID mismatch", path)
	}
	return &cosigV1{parts[0], id, ed25519.PublicKey(key[1:])}, nil
}

func verifiers(paths []string) ([]note.Verifier, error) {
	var list []note.Verifier
	for _, p := range paths {
		v, err := verifier(p)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	return list, nil
}

type treeHead struct {
	origin string
	size   int64
	root   tlog.Hash
}

// canonical refuses a signature line whose base64 is not in its one canonical
// spelling (RFC 4648 section 4): note.Open decodes leniently, so a change of
// the unused low bits of the last character would leave the signature bytes,
// and its verdict, unchanged.
func canonical(msg []byte) error {
	i := bytes.LastIndex(msg, []byte("\n\n"))
	if i < 0 {
		return errors.New("no signatures")
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(msg[i+2:]), "\n"), "\n") {
		f := strings.Split(l, " ")
		if _, err := b64(f[len(f)-1]); err != nil {
			return fmt.Errorf("signature line %q: %v", l, err)
		}
	}
	return nil
}

// open opens a signed note with the verifiers and requires every one of them among the signers.
func open(msg []byte, list []note.Verifier) (*note.Note, treeHead, error) {
	if err := canonical(msg); err != nil {
		return nil, treeHead{}, err
	}
	n, err := note.Open(msg, note.VerifierList(list...))
	if err != nil {
		return nil, treeHead{}, err
	}
	for _, v := range list {
		found := false
		for _, s := range n.Sigs {
			if s.Name == v.Name() && s.Hash == v.KeyHash() {
				found = true
			}
		}
		if !found {
			return nil, treeHead{}, fmt.Errorf("%s did not sign", v.Name())
		}
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[0] == "" {
		return nil, treeHead{}, errors.New("not a checkpoint")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return nil, treeHead{}, errors.New("bad tree size")
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil || root.String() != lines[2] {
		return nil, treeHead{}, errors.New("bad root hash")
	}
	return n, treeHead{lines[0], size, root}, nil
}

func b64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return nil, errors.New("not canonical base64")
	}
	return b, nil
}

// checkProof splits a tlog-proof (c2sp.org/tlog-proof "Format") and runs the four verification steps.
func checkProof(data []byte, list []note.Verifier) (string, error) {
	rest := data
	line := func() (string, error) {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return "", errors.New("no newline")
		}
		l := string(rest[:i])
		rest = rest[i+1:]
		return l, nil
	}
	header, err := line()
	if err != nil || header != "c2sp.org/tlog-proof@v1" {
		return "", errors.New("bad header")
	}
	l, err := line()
	if err != nil {
		return "", err
	}
	var extra []byte
	if strings.HasPrefix(l, "extra ") {
		if extra, err = b64(l[len("extra "):]); err != nil {
			return "", err
		}
		if l, err = line(); err != nil {
			return "", err
		}
	}
	if !strings.HasPrefix(l, "index ") {
		return "", errors.New("no index line")
	}
	index, err := strconv.ParseInt(l[len("index "):], 10, 64)
	if err != nil || index < 0 || strconv.FormatInt(index, 10) != l[len("index "):] {
		return "", errors.New("bad index")
	}
	var proof tlog.RecordProof
	for {
		if l, err = line(); err != nil {
			return "", err
		}
		if l == "" {
			break
		}
		h, err := b64(l)
		if err != nil || len(h) != tlog.HashSize {
			return "", errors.New("bad proof hash")
		}
		var hash tlog.Hash
		copy(hash[:], h)
		proof = append(proof, hash)
	}
	// 2. and 3. the checkpoint, signed by every key given (the log's and the witnesses')
	_, head, err := open(rest, list)
	if err != nil {
		return "", err
	}
	if extra == nil {
		return "", errors.New("no extra line: the entry is not known")
	}
	// 1. and 4. the leaf hash of the entry, and its inclusion proof to the signed root
	if err := tlog.CheckRecord(proof, head.size, head.root, index, tlog.RecordHash(extra)); err != nil {
		return "", err
	}
	return fmt.Sprintf("entry %d of %d in %s", index, head.size, head.origin), nil
}

func checkRequest(body, old []byte, list []note.Verifier) (string, error) {
	_, oldHead, err := open(old, list)
	if err != nil {
		return "", fmt.Errorf("old checkpoint: %v", err)
	}
	parts := bytes.SplitN(body, []byte("\n\n"), 2)
	if len(parts) != 2 {
		return "", errors.New("no empty line")
	}
	lines := strings.Split(string(parts[0]), "\n")
	if lines[0] != fmt.Sprintf("old %d", oldHead.size) {
		return "", fmt.Errorf("the old size line is %q", lines[0])
	}
	var proof tlog.TreeProof
	for _, l := range lines[1:] {
		h, err := b64(l)
		if err != nil || len(h) != tlog.HashSize {
			return "", errors.New("bad proof hash")
		}
		var hash tlog.Hash
		copy(hash[:], h)
		proof = append(proof, hash)
	}
	_, head, err := open(parts[1], list)
	if err != nil {
		return "", err
	}
	if head.origin != oldHead.origin {
		return "", errors.New("another log")
	}
	if err := tlog.CheckTree(proof, head.size, head.root, oldHead.size, oldHead.root); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d -> %d consistent in %s", oldHead.size, head.size, head.origin), nil
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: tlog_check proof|tamper|request|cosigned FILE ...")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	what, keys := os.Args[1], os.Args[3:]
	if what == "request" {
		keys = os.Args[4:]
	}
	list, err := verifiers(keys)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var said string
	switch what {
	case "proof":
		said, err = checkProof(data, list)
	case "tamper":
		for i := range data {
			changed := append([]byte(nil), data...)
			changed[i] ^= 0x01
			if _, e := checkProof(changed, list); e == nil {
				err = fmt.Errorf("byte %d changed and the proof still verifies", i)
				break
			}
		}
		said = fmt.Sprintf("all %d one-byte changes refused", len(data))
	case "request":
		old, e := os.ReadFile(os.Args[3])
		if e != nil {
			err = e
			break
		}
		said, err = checkRequest(data, old, list)
	case "cosigned":
		var head treeHead
		_, head, err = open(data, list)
		said = fmt.Sprintf("%s, %d entries, signed by all %d keys", head.origin, head.size, len(list))
	default:
		err = errors.New("unknown check " + what)
	}
	if err != nil {
		fmt.Printf("FAILED %s %s: %v\n", what, os.Args[2], err)
		os.Exit(1)
	}
	fmt.Printf("ok %s %s: %s\n", what, os.Args[2], said)
}
