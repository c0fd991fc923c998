// One harness of `parcrypt-lab --peers` (protocol: peers/README.md): Go's crypto/aes and
// crypto/cipher, standard library only.
//
//	go-peer CIPHER DIRECTION BYTES THREADS RUNS MIN_SECONDS
//
// GCM: one cipher.AEAD per key, Seal/Open per message with a fresh nonce. CTR: the block
// cipher is keyed once; each message makes cipher.NewCTR(block, iv) (Go's only way to set a
// new IV) and XORKeyStream. Each worker goroutine is locked to its own OS thread.
package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

const tagBytes = 16

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "error: "+format+"\n", args...)
	os.Exit(code)
}

type keyed struct {
	gcm   bool
	block cipher.Block
	aead  cipher.AEAD
}

func newKeyed(gcm bool, key []byte) keyed {
	block, err := aes.NewCipher(key)
	if err != nil {
		fail(1, "the key: %v", err)
	}
	k := keyed{gcm: gcm, block: block}
	if gcm {
		if k.aead, err = cipher.NewGCM(block); err != nil {
			fail(1, "GCM: %v", err)
		}
	}
	return k
}

// message runs one message from in to out (GCM: ciphertext then tag) under iv; false when a
// tag does not verify.
func (k keyed) message(encrypt bool, iv, in, out []byte) bool {
	if !k.gcm {
		cipher.NewCTR(k.block, iv).XORKeyStream(out[:len(in)], in)
		return true
	}
	if encrypt {
		k.aead.Seal(out[:0], iv, in, nil)
		return true
	}
	_, err := k.aead.Open(out[:0], iv, in, nil)
	return err == nil
}

func unhex(text string) []byte {
	b, err := hex.DecodeString(text)
	if err != nil {
		fail(1, "hex")
	}
	return b
}

// knownAnswer checks NIST GCM test cases 2 and 14, SP 800-38A F.5.1 and F.5.5 (first block).
func knownAnswer(gcm bool, keyBytes int) bool {
	var key, iv, plain, expected []byte
	if gcm {
		key, iv, plain = make([]byte, keyBytes), make([]byte, 12), make([]byte, 16)
		if keyBytes == 16 {
			expected = unhex("0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf")
		} else {
			expected = unhex("cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919")
		}
	} else {
		iv = unhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
		plain = unhex("6bc1bee22e409f96e93d7e117393172a")
		if keyBytes == 16 {
			key = unhex("2b7e151628aed2a6abf7158809cf4f3c")
			expected = unhex("874d6191b620e3261bef6864990db6ce")
		} else {
			key = unhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
			expected = unhex("601ec313775789a5b7a7f504bbf3d228")
		}
	}
	k := newKeyed(gcm, key)
	out := make([]byte, len(expected))
	if !k.message(true, iv, plain, out) || !bytes.Equal(out, expected) {
		return false
	}
	back := make([]byte, len(expected))
	return k.message(false, iv, expected, back) && bytes.Equal(back[:16], plain)
}

// Bytes of unused room after each goroutine's buffers.
const spacing = 4096

func main() {
	args := os.Args[1:]
	if len(args) != 6 {
		fail(1, "usage: go-peer CIPHER DIRECTION BYTES THREADS RUNS MIN_SECONDS")
	}
	name := args[0]
	var gcm bool
	var keyBytes int
	switch name {
	case "aes-128-gcm":
		gcm, keyBytes = true, 16
	case "aes-256-gcm":
		gcm, keyBytes = true, 32
	case "aes-128-ctr":
		gcm, keyBytes = false, 16
	case "aes-256-ctr":
		gcm, keyBytes = false, 32
	default:
		fail(1, "unknown cipher %s", name)
	}
	if args[1] != "encrypt" && args[1] != "decrypt" {
		fail(1, "unknown direction %s", args[1])
	}
	encrypt := args[1] == "encrypt"
	size, e1 := strconv.Atoi(args[2])
	threads, e2 := strconv.Atoi(args[3])
	runs, e3 := strconv.Atoi(args[4])
	minSeconds, e4 := strconv.ParseFloat(args[5], 64)
	if e1 != nil || e2 != nil || e3 != nil || e4 != nil || size < 0 || threads < 1 || runs < 1 {
		fail(1, "BYTES, THREADS, RUNS and MIN_SECONDS are numbers")
	}
	if !knownAnswer(gcm, keyBytes) {
		fail(2, "known-answer test failed")
	}

	key := make([]byte, keyBytes)
	for i := range key {
		key[i] = byte(i)
	}
	k := newKeyed(gcm, key)
	ivBytes := 16
	tag := 0
	if gcm {
		ivBytes, tag = 12, tagBytes
	}
	fixedIV := bytes.Repeat([]byte{0x5a}, ivBytes)
	ins := make([][]byte, threads)
	outs := make([][]byte, threads)
	for t := 0; t < threads; t++ {
		// 4 KiB of unused room after each buffer, as every harness leaves: adjacent
		// goroutines' buffers could share a cache line or prefetched pair otherwise.
		plain := make([]byte, size, size+spacing)
		for i := range plain {
			plain[i] = byte(i * 31)
		}
		ins[t] = plain
		if gcm && !encrypt {
			ins[t] = k.aead.Seal(make([]byte, 0, size+tag+spacing), fixedIV, plain, nil)
		}
		outs[t] = make([]byte, size+tag, size+tag+spacing)
		for i := range outs[t] {
			outs[t][i] = 0x11
		}
	}

	run := func(count int) float64 {
		var ready, done sync.WaitGroup
		start := make(chan struct{})
		ready.Add(threads)
		done.Add(threads)
		for t := 0; t < threads; t++ {
			go func(t int) {
				runtime.LockOSThread()
				defer done.Done()
				iv := append(make([]byte, 0, 128), fixedIV...)
				ready.Done()
				<-start
				for index := 0; index < count; index++ {
					if encrypt || !gcm {
						iv[0] = byte(t)
						binary.BigEndian.PutUint64(iv[4:12], uint64(index))
					}
					if !k.message(encrypt, iv, ins[t], outs[t]) {
						fail(1, "a tag did not verify")
					}
				}
			}(t)
		}
		ready.Wait()
		began := time.Now()
		close(start)
		done.Wait()
		return time.Since(began).Seconds()
	}
	count := 1
	for run(count) < minSeconds {
		count *= 2
	}
	seconds := make([]string, runs)
	for r := range seconds {
		seconds[r] = strconv.FormatFloat(run(count), 'f', 9, 64)
	}
	fmt.Printf("{\"peer\":\"go\",\"library\":\"%s crypto/cipher\",\"cipher\":\"%s\",\"direction\":\"%s\",\"bytes\":%d,\"threads\":%d,\"messages\":%d,\"seconds\":[%s]}\n",
		runtime.Version(), name, args[1], size, threads, count, strings.Join(seconds, ","))
}
