/// The router's tree of pattern segments flattened into arrays of plain values, made anew by
/// `HTTPRouter.add` and immutable: shared by every loop without a lock, a match walks it over the
/// path's bytes with no reference counting and no allocation until its answer (the parameters).
final class HTTPRouteTable: Sendable {
    struct Node: Sendable {
        var firstEdge = 0
        var edgeCount = 0
        /// The node a parameter segment leads to, -1 for none.
        var parameter = -1
        var firstRoute = 0
        var routeCount = 0
        /// Fixed segments on the way from the root (the patterns' specificity).
        var fixedSegments = 0
    }

    /// A fixed segment: its bytes in `bytes`, and the node it leads to.
    struct Edge: Sendable {
        var byteStart: Int
        var byteCount: Int
        var node: Int
    }

    let nodes: [Node]
    let edges: [Edge]
    let bytes: [UInt8]
    /// The routes ending at each node (`Node.firstRoute`), in registration order: their methods
    /// and registration orders for the walk, the routes themselves for the answer.
    let methods: [String]
    let orders: [Int]
    let routes: [HTTPRouter.Route]
    let maxParameters: Int

    init(nodes: [Node] = [Node()], edges: [Edge] = [], bytes: [UInt8] = [], routes: [HTTPRouter.Route] = []) {
        self.nodes = nodes
        self.edges = edges
        self.bytes = bytes
        self.routes = routes
        methods = routes.map(\.method)
        orders = routes.map(\.order)
        maxParameters = routes.map(\.parameterNames.count).max() ?? 0
    }

    /// The most specific patterns that bind `path`: the first registered with method `lookup`
    /// (its index in `routes`, its parameters' byte ranges in `found`), else the other methods
    /// they serve.
    struct Outcome {
        var route: Int?
        var parameterCount = 0
        var allowed: [String] = []
    }

    func match(_ lookup: String, _ path: UnsafeBufferPointer<UInt8>, found: UnsafeMutableBufferPointer<Range<Int>>) -> Outcome {
        let scratchCount = max(maxParameters, 1)
        return nodes.withUnsafeBufferPointer { nodes in
            edges.withUnsafeBufferPointer { edges in
                bytes.withUnsafeBufferPointer { bytes in
                    methods.withUnsafeBufferPointer { methods in
                        orders.withUnsafeBufferPointer { orders in
                            withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: scratchCount) { values in
                                var walker = Walker(nodes: nodes, edges: edges, bytes: bytes, methods: methods, orders: orders,
                                                    path: path, lookup: lookup, values: values, found: found)
                                walker.walk(from: 0, at: 0, depth: 0)
                                return walker.outcome
                            }
                        }
                    }
                }
            }
        }
    }

    private struct Walker {
        let nodes: UnsafeBufferPointer<Node>
        let edges: UnsafeBufferPointer<Edge>
        let bytes: UnsafeBufferPointer<UInt8>
        let methods: UnsafeBufferPointer<String>
        let orders: UnsafeBufferPointer<Int>
        let path: UnsafeBufferPointer<UInt8>
        let lookup: String
        let values: UnsafeMutableBufferPointer<Range<Int>>
        let found: UnsafeMutableBufferPointer<Range<Int>>
        var outcome = Outcome()
        var specificity = -1
        var foundOrder = Int.max

        /// Follows the segment at `start` from `node`: its fixed edge, then its parameter edge
        /// (an empty segment is no parameter), depth first.
        mutating func walk(from node: Int, at start: Int, depth: Int) {
            var end = start
            while end < path.count, path[end] != UInt8(ascii: "/") { end += 1 }
            let last = end == path.count
            let here = nodes[node]
            for edge in edges[here.firstEdge..<(here.firstEdge + here.edgeCount)] where edge.byteCount == end - start {
                var same = true
                for offset in 0..<edge.byteCount where bytes[edge.byteStart + offset] != path[start + offset] {
                    same = false
                    break
                }
                guard same else { continue }
                if last { reach(edge.node, depth: depth) } else { walk(from: edge.node, at: end + 1, depth: depth) }
                break
            }
            if here.parameter >= 0, start != end, depth < values.count {
                values[depth] = start..<end
                if last {
                    reach(here.parameter, depth: depth + 1)
                } else {
                    walk(from: here.parameter, at: end + 1, depth: depth + 1)
                }
            }
        }

        /// A node the whole path reaches: its routes count if its patterns are at least as
        /// specific as the best so far and its parameters decode.
        private mutating func reach(_ index: Int, depth: Int) {
            let node = nodes[index]
            // Less specific patterns than one that binds the path do not count.
            guard node.routeCount > 0, node.fixedSegments >= specificity else { return }
            for range in values[0..<depth] where !HTTPRouter.decodes(UnsafeBufferPointer(rebasing: path[range])) { return }
            if node.fixedSegments > specificity {
                specificity = node.fixedSegments
                outcome = Outcome()
                foundOrder = .max
            }
            for route in node.firstRoute..<(node.firstRoute + node.routeCount) {
                if methods[route] != lookup {
                    outcome.allowed.append(methods[route])
                } else if orders[route] < foundOrder {
                    foundOrder = orders[route]
                    outcome.route = route
                    outcome.parameterCount = depth
                    for position in 0..<depth { found[position] = values[position] }
                }
            }
        }
    }
}
