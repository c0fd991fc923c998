package dev.parcrypt.bench;

import dev.parcrypt.Backend;
import dev.parcrypt.Cipher;
import dev.parcrypt.Parcrypt;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import javax.crypto.spec.SecretKeySpec;

/**
 * Seed S0's experiment re-run as S0 ran it: AES-128 over one 17.9 MB file, the key read from
 * a text file, encryption and decryption, the mean of 10 runs, the round trip checked; but
 * timed honestly: untimed runs first, at least 3 and 6 seconds (the JIT compiles the
 * AES intrinsics, the threads and pages exist), the
 * median beside the mean, and every run's output checked against the one-thread result.
 *
 * <p>S0's mode was ECB in effect (blocks of 16 bytes processed independently) with a zero
 * padding and a length byte; here it is AES-128-ECB with PKCS#7 padding, the standard form
 * (same work, one block more or less). The file is read once, outside the timing, as S0's
 * timed section was the cipher over the bytes in memory.
 *
 * <p>Usage: {@code java -cp benchmarks.jar dev.parcrypt.bench.SeedS0 FILE KEYFILE [RUNS]}:
 * prints a Markdown table (ms).
 */
public final class SeedS0 {
    private SeedS0() {}

    /** Untimed runs first: at least this many, and for at least WARM_UP_NANOS in all. */
    private static final int WARM_UP = 3;

    /** javax.crypto's AES intrinsics were compiled only after about 4 s of work here. */
    private static final long WARM_UP_NANOS = 6_000_000_000L;

    interface Run {
        byte[] apply(byte[] input) throws Exception;
    }

    record Row(String name, Run encrypt, Run decrypt, String seed) {}

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: SeedS0 FILE KEYFILE [RUNS]");
            System.exit(2);
        }
        byte[] plaintext = Files.readAllBytes(Path.of(args[0]));
        byte[] key = HexFormat.of().parseHex(Files.readString(Path.of(args[1]), StandardCharsets.US_ASCII).strip());
        int runs = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        int cores = Runtime.getRuntime().availableProcessors();

        javax.crypto.Cipher jce = javax.crypto.Cipher.getInstance("AES/ECB/PKCS5Padding");
        SecretKeySpec jceKey = new SecretKeySpec(key, "AES");
        Cipher seq = Parcrypt.cipher("aes-128-ecb", key, null, Backend.seq());
        Cipher threads = Parcrypt.cipher("aes-128-ecb", key, null, Backend.javaThreads(cores));
        Cipher forkJoin = Parcrypt.cipher("aes-128-ecb", key, null, Backend.forkJoin());
        Cipher pool = Parcrypt.cipher("aes-128-ecb", key, null, Backend.pool());
        List<Row> rows = List.of(
                new Row("javax.crypto, one thread (S0: Java seq)", input -> {
                    jce.init(javax.crypto.Cipher.ENCRYPT_MODE, jceKey);
                    return jce.doFinal(input);
                }, input -> {
                    jce.init(javax.crypto.Cipher.DECRYPT_MODE, jceKey);
                    return jce.doFinal(input);
                }, "504.6 / 704"),
                new Row("parcrypt seq, one thread", seq::encrypt, seq::decrypt, "C seq: 2500.9 / 3089.5"),
                new Row("JavaThreads, " + cores + " threads (S0: Java Threads)", threads::encrypt, threads::decrypt,
                        "210.6 / 212.6"),
                new Row("ForkJoin, 256 KiB threshold (S0: ForkJoin)", forkJoin::encrypt, forkJoin::decrypt,
                        "203.8 / 219.3"),
                new Row("parcrypt pool, " + cores + " threads (native; S0: OpenMP)", pool::encrypt, pool::decrypt,
                        "826.3 / 1004.2"));

        byte[] expected = rows.get(0).encrypt().apply(plaintext);
        System.out.printf("S0 re-run: AES-128-ECB over %s (%,d bytes), %d timed runs after at least %d untimed and"
                + " %d s, %d cores, Java %s%n%n", args[0], plaintext.length, runs, WARM_UP, WARM_UP_NANOS / 1_000_000_000L,
                cores, System.getProperty("java.version"));
        System.out.println("| implementation | encrypt mean ms | encrypt median ms | decrypt mean ms | decrypt median ms"
                + " | S0's figures (ms, enc / dec; i5-8250U 4C/8T) |");
        System.out.println("|---|---:|---:|---:|---:|---|");
        for (Row row : rows) {
            double[] encrypt = time(row.encrypt(), plaintext, expected, runs);
            double[] decrypt = time(row.decrypt(), expected, plaintext, runs);
            System.out.printf("| %s | %.1f | %.1f | %.1f | %.1f | %s |%n", row.name(), mean(encrypt), median(encrypt),
                    mean(decrypt), median(decrypt), row.seed());
        }
        MemorySegment.ofArray(key).fill((byte) 0);
        for (Cipher cipher : List.of(seq, threads, forkJoin, pool)) {
            cipher.close();
        }
    }

    /** The milliseconds of each timed run; every run's output must equal {@code expected}. */
    static double[] time(Run run, byte[] input, byte[] expected, int runs) throws Exception {
        long warmStart = System.nanoTime();
        for (int i = 0; i < WARM_UP || System.nanoTime() - warmStart < WARM_UP_NANOS; i++) {
            if (!Arrays.equals(run.apply(input), expected)) {
                throw new IllegalStateException("a run's output differs from the one-thread result");
            }
        }
        double[] millis = new double[runs];
        for (int i = 0; i < runs; i++) {
            long start = System.nanoTime();
            byte[] output = run.apply(input);
            long elapsed = System.nanoTime() - start;
            if (!Arrays.equals(output, expected)) {
                throw new IllegalStateException("a run's output differs from the one-thread result");
            }
            millis[i] = elapsed / 1e6;
        }
        return millis;
    }

    static double mean(double[] values) {
        return Arrays.stream(values).average().orElse(Double.NaN);
    }

    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int middle = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
    }
}
