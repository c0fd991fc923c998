package dev.parcrypt;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;

/**
 * What the tests share: the backends each test runs on, random bytes, the vector files,
 * bodies run on many threads at once.
 */
final class Support {
    private Support() {}

    static final HexFormat HEX = HexFormat.of();

    /** A ForkJoin pool of 3 for the tests (the machine may have fewer cores: more threads than cores is fine). */
    static final ForkJoinPool POOL = new ForkJoinPool(3);

    /**
     * Every backend that runs on a CPU: the engine's (pool and threads with 2 threads, to
     * split even on a small machine) and the Java strategies with small thresholds, so
     * that messages of a few KiB are cut into many segments.
     */
    static List<Backend> backends() {
        return List.of(Backend.seq(), Backend.pool(2), Backend.threads(2), Backend.auto(),
                Backend.javaThreads(1), Backend.javaThreads(3), Backend.javaThreads(8),
                Backend.forkJoin(POOL, 16), Backend.forkJoin(POOL, 4096), Backend.forkJoin());
    }

    static byte[] bytes(SplittableRandom random, int length) {
        byte[] out = new byte[length];
        random.nextBytes(out);
        return out;
    }

    /** One record of a vector file: its section and its fields. */
    record Vector(String section, Map<String, byte[]> fields) {
        byte[] get(String name) {
            byte[] value = fields.get(name);
            if (value == null) {
                throw new IllegalStateException(section + " has no field " + name);
            }
            return value;
        }
    }

    /** Reads tests/vectors/NAME (the format of tests/vectors/README.md), copied onto the test class path. */
    static List<Vector> vectors(String name) throws IOException {
        List<Vector> out = new ArrayList<>();
        try (InputStream in = Support.class.getResourceAsStream("/vectors/" + name)) {
            if (in == null) {
                throw new IOException("vector file " + name + " is not on the test class path");
            }
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            String section = "";
            Map<String, byte[]> fields = new LinkedHashMap<>();
            for (String line = reader.readLine(); ; line = reader.readLine()) {
                boolean end = line == null || line.isBlank() || line.startsWith("[");
                if (end && !fields.isEmpty()) {
                    out.add(new Vector(section, fields));
                    fields = new LinkedHashMap<>();
                }
                if (line == null) {
                    break;
                }
                line = line.strip();
                if (line.startsWith("[")) {
                    section = line.substring(1, line.length() - 1);
                } else if (!line.isEmpty() && !line.startsWith("#")) {
                    int equals = line.indexOf('=');
                    fields.put(line.substring(0, equals).strip(), HEX.parseHex(line.substring(equals + 1).strip()));
                }
            }
        }
        if (out.isEmpty()) {
            throw new IOException("no vectors in " + name);
        }
        return out;
    }

    /** A test body run on one of {@link #onThreads}' threads. */
    interface Body {
        void run(int thread) throws Exception;
    }

    /**
     * Runs {@code body} on {@code threads} platform threads at once (numbered from 0) and
     * waits for them; the first failure of any is rethrown (as an ExecutionException).
     */
    static void onThreads(int threads, Body body) throws Exception {
        ExecutorService executor = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                futures.add(executor.submit(() -> {
                    body.run(thread);
                    return null;
                }));
            }
            for (Future<?> future : futures) {
                future.get();
            }
        } finally {
            executor.shutdown();
        }
    }
}
