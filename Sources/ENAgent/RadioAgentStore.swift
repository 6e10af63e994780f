import ENCore
import ENStore

/// What the radio agent keeps in storage: the interval on the air (a setting) and the sightings.
public protocol RadioAgentStore: Sendable {
    func setting(_ name: String) throws(StoreError) -> String?
    /// Sets `name` to `value`; nil removes it.
    func setSetting(_ name: String, to value: String?) throws(StoreError)
    func record(_ sightings: [Sighting]) throws(StoreError)
}

extension AgentStore: RadioAgentStore {}
