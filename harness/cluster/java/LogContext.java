package org.apache.kafka.common.utils;

import org.slf4j.Logger;

/**
 * kafka-chaos's bridge for tiered storage on Kafka 4.4.0 (harness/cluster/tiered.py): 4.4.0
 * publishes no kafka-storage test jar, and the newest published LocalTieredStorage (4.3.1's)
 * calls {@code new org.apache.kafka.common.utils.LogContext(String).logger(Class)}, a class
 * 4.4.0 moved to {@code org.apache.kafka.common.utils.internals.LogContext}. This class has
 * the old name and hands every call to the build's own; it is put on a broker's class path
 * only when the build lacks the old class. Nothing else LocalTieredStorage uses moved (its
 * class references checked against the 4.4.0 jars, 2026-11-28).
 */
public class LogContext {
    private final org.apache.kafka.common.utils.internals.LogContext inner;

    public LogContext(String logPrefix) {
        inner = new org.apache.kafka.common.utils.internals.LogContext(logPrefix);
    }

    public LogContext() {
        inner = new org.apache.kafka.common.utils.internals.LogContext();
    }

    public Logger logger(Class<?> clazz) {
        return inner.logger(clazz);
    }

    public Logger logger(String clazz) {
        return inner.logger(clazz);
    }

    public String logPrefix() {
        return inner.logPrefix();
    }
}
