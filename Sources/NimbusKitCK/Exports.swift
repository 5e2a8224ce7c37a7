@_exported import NimbusKit
