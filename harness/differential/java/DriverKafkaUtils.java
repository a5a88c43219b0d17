/*
 * The two client utilities the driver uses that Kafka 4.4 moved: kafka-clients 4.4.0 has
 * LogContext and AppInfoParser only in org.apache.kafka.common.utils.internals (before:
 * org.apache.kafka.common.utils). An import cannot be chosen at run time, so this is the one
 * file that names them: for a build with the new package, harness/differential/driver.py
 * (source_for) compiles a copy of the sources with these two imports rewritten. Every other
 * file reaches them through here without naming their types.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.common.utils.LogContext;

final class DriverKafkaUtils {
    /** The log context every manager of the session is built with. */
    static final LogContext LOG_CONTEXT = new LogContext("[differential] ");

    private DriverKafkaUtils() {
    }

    /** The build's version, as its kafka-clients jar says (e.g. "4.3.1"). */
    static String kafkaVersion() {
        return AppInfoParser.getVersion();
    }
}
