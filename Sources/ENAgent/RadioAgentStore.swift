import ENCore
import ENStore

/// What the radio agent keeps in storage: the interval on the air (a setting) and the sightings.
public protocol RadioAgentStore: SettingStore {
    func record(_ sightings: [Sighting]) throws(StoreError)
}

extension AgentStore: RadioAgentStore {}
