/*
 * Names for the oracles' reports: every topic id the records ever named, with its name,
 * kept after the topic is deleted (a stale index entry of a deleted topic is named by the
 * name it had: its lane).
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;

import java.util.HashMap;
import java.util.Map;

final class DriverOracleNames {
    final Map<Uuid, String> names = new HashMap<>();

    void topic(Uuid id, String name) {
        names.put(id, name);
    }

    String topic(Uuid id) {
        String name = names.get(id);
        return name == null ? id.toString() : name;
    }

    String partition(Uuid id, int partition) {
        return topic(id) + "-" + partition;
    }
}
