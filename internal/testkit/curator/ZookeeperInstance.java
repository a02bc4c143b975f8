// ZookeeperInstance is Spring Cloud Zookeeper's payload class, under its
// own name and with its fields in its order (Spring Cloud is not packaged
// by Debian): Jackson writes and reads it as Spring Cloud's, so the agent
// registers and finds instances as a Spring Cloud service does.
package org.springframework.cloud.zookeeper.discovery;

import java.util.HashMap;
import java.util.Map;

public class ZookeeperInstance {
    private String id;
    private String name;
    private Map<String, String> metadata = new HashMap<>();

    @SuppressWarnings("unused")
    private ZookeeperInstance() {}

    public ZookeeperInstance(String id, String name, Map<String, String> metadata) {
        this.id = id;
        this.name = name;
        this.metadata = metadata;
    }

    public String getId() { return id; }
    public String getName() { return name; }
    public void setId(String id) { this.id = id; }
    public void setName(String name) { this.name = name; }
    public Map<String, String> getMetadata() { return metadata; }
    public void setMetadata(Map<String, String> metadata) { this.metadata = metadata; }
}
