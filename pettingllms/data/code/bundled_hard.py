"""The twenty "hard" bundled problems: dynamic programming, graphs and greedy algorithms."""

from __future__ import annotations

import numpy as np

from pettingllms.data.code.bundled_spec import BundledSpec, integer, integers, lines, word


def _knapsack(rng: np.random.Generator) -> str:
    n, capacity = integer(rng, 1, 60), integer(rng, 1, 1000)
    return lines([n, capacity], *[[integer(rng, 1, 300), integer(rng, 1, 1000)] for _ in range(n)])


def _two_words(rng: np.random.Generator) -> str:
    alphabet = "ab" if rng.random() < 0.3 else "abcdef"
    return lines(word(rng, 1, 60, alphabet), word(rng, 1, 60, alphabet))


def _coins(rng: np.random.Generator) -> str:
    coins = sorted({integer(rng, 2, 30) for _ in range(integer(rng, 1, 6))})
    if rng.random() < 0.5:
        coins = sorted({1, *coins})
    return lines([len(coins), integer(rng, 0, 500)], coins)


def _sequence(rng: np.random.Generator) -> str:
    n = integer(rng, 1, 300)
    return lines(n, integers(rng, n, 1, integer(rng, 5, 1000)))


def _maze(rng: np.random.Generator) -> str:
    r, c = integer(rng, 2, 12), integer(rng, 2, 12)
    wall_share = rng.uniform(0.1, 0.4)
    grid = [["#" if rng.random() < wall_share else "." for _ in range(c)] for _ in range(r)]
    cells = rng.choice(r * c, size=2, replace=False)
    (sr, sc), (tr, tc) = divmod(int(cells[0]), c), divmod(int(cells[1]), c)
    grid[sr][sc], grid[tr][tc] = "S", "T"
    return lines([r, c], *["".join(row) for row in grid])


def _edges(rng: np.random.Generator, n: int, m: int, connected: bool) -> list[list[int]]:
    """``m`` distinct undirected edges without self-loops on vertices 1..n (fewer if the graph fills up),
    in random order; when ``connected`` they include a random spanning tree (a forest if m < n - 1)."""
    pairs = set()
    if connected:
        labels = [int(x) + 1 for x in rng.permutation(n)]
        pairs = {tuple(sorted((labels[integer(rng, 0, i - 1)], labels[i]))) for i in range(1, min(n, m + 1))}
    for _ in range(20 * m):
        if len(pairs) >= m:
            break
        u, v = sorted(integers(rng, 2, 1, n))
        if u != v:
            pairs.add((u, v))
    ordered = sorted(pairs)
    return [list(ordered[int(i)]) for i in rng.permutation(len(ordered))]


def _graph(rng: np.random.Generator, max_n: int = 12, weights: bool = False) -> str:
    n = integer(rng, 2, max_n)
    edges = _edges(rng, n, integer(rng, 0, n + n // 2), connected=rng.random() < 0.5)
    if weights:
        edges = [[u, v, integer(rng, 1, 20)] for u, v in edges]
    return lines([n, len(edges)], *edges)


def _dag(rng: np.random.Generator) -> str:
    n = integer(rng, 1, 10)
    order = [int(x) + 1 for x in rng.permutation(n)]
    edges = []
    for _ in range(integer(rng, 0, 2 * n)):
        i, j = sorted(integers(rng, 2, 0, n - 1))
        if i != j:
            edges.append([order[i], order[j]])
    if edges and rng.random() < 0.3:
        u, v = edges[integer(rng, 0, len(edges) - 1)]
        edges.append([v, u])
    return lines([n, len(edges)], *edges)


def _jobs(rng: np.random.Generator, profit: bool) -> str:
    n = integer(rng, 1, 15)
    rows = []
    for _ in range(n):
        start = integer(rng, 0, 40)
        end = start + integer(rng, 1, 12)
        rows.append([start, end, integer(rng, 1, 50)] if profit else [start, end])
    return lines(n, *rows)


def _land(rng: np.random.Generator) -> str:
    r, c = integer(rng, 1, 10), integer(rng, 1, 10)
    land = rng.uniform(0.2, 0.6)
    return lines([r, c], *["".join("#" if rng.random() < land else "." for _ in range(c)) for _ in range(r)])


def _obstacles(rng: np.random.Generator) -> str:
    r, c = integer(rng, 1, 18), integer(rng, 1, 18)
    rock = rng.uniform(0.0, 0.25)
    grid = [["#" if rng.random() < rock else "." for _ in range(c)] for _ in range(r)]
    if rng.random() < 0.8:
        grid[0][0] = grid[r - 1][c - 1] = "."
    return lines([r, c], *["".join(row) for row in grid])


def _partition(rng: np.random.Generator) -> str:
    n = integer(rng, 1, 20)
    a = integers(rng, n, 1, 50)
    if rng.random() < 0.5 and n > 1:
        half = integer(rng, 1, n - 1)
        a[-1] = max(1, sum(a[:half]) - sum(a[half:-1]))
    return lines(n, a)


def _jumps(rng: np.random.Generator) -> str:
    n = integer(rng, 1, 30)
    return lines(n, [integer(rng, 1, 3) if rng.random() < 0.85 else 0 for _ in range(n)])


def _tree(rng: np.random.Generator) -> str:
    n = integer(rng, 1, 30)
    labels = [int(x) + 1 for x in rng.permutation(n)]
    edges = [[labels[integer(rng, 0, i - 1)], labels[i]] for i in range(1, n)]
    return lines(n, *[edges[int(i)] for i in rng.permutation(len(edges))])


SPECS = (
    BundledSpec(
        slug="knapsack",
        difficulty="hard",
        statement="""
            Knapsack

            Choose items of the largest total value whose total weight does not exceed the capacity; each item
            can be taken at most once.

            Input
            The first line holds n and W (1 <= n <= 60, 1 <= W <= 1000). Each of the next n lines holds the
            weight w_i and the value v_i of an item (1 <= w_i <= 300, 1 <= v_i <= 1000).

            Output
            The largest total value of a set of items with total weight at most W.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n, capacity = data[0], data[1]
            best = [0] * (capacity + 1)
            for i in range(n):
                w, v = data[2 + 2 * i], data[3 + 2 * i]
                for c in range(capacity, w - 1, -1):
                    best[c] = max(best[c], best[c - w] + v)
            print(best[capacity])
        """,
        example="3 50\n10 60\n20 100\n30 120\n",
        generate=_knapsack,
    ),
    BundledSpec(
        slug="lcs-length",
        difficulty="hard",
        statement="""
            Longest common subsequence

            Find the length of the longest sequence of letters that is a subsequence of both words (a
            subsequence keeps letters in order but may skip some).

            Input
            Two lines, each with a word of 1 to 60 lowercase letters.

            Output
            The length of a longest common subsequence.
        """,
        reference="""
            a = input().strip()
            b = input().strip()
            prev = [0] * (len(b) + 1)
            for ch in a:
                cur = [0]
                for j, other in enumerate(b):
                    cur.append(prev[j] + 1 if ch == other else max(prev[j + 1], cur[j]))
                prev = cur
            print(prev[-1])
        """,
        example="abcbdab\nbdcaba\n",
        generate=_two_words,
    ),
    BundledSpec(
        slug="edit-distance",
        difficulty="hard",
        statement="""
            Edit distance

            Find the least number of single-letter insertions, deletions and substitutions that turn the first
            word into the second.

            Input
            Two lines, each with a word of 1 to 60 lowercase letters.

            Output
            The edit (Levenshtein) distance between the two words.
        """,
        reference="""
            a = input().strip()
            b = input().strip()
            prev = list(range(len(b) + 1))
            for i, ch in enumerate(a, 1):
                cur = [i]
                for j, other in enumerate(b, 1):
                    cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ch != other)))
                prev = cur
            print(prev[-1])
        """,
        example="kitten\nsitting\n",
        generate=_two_words,
    ),
    BundledSpec(
        slug="coin-change-ways",
        difficulty="hard",
        statement="""
            Ways to pay

            Count the ways to pay an amount with coins of the given denominations, each available in unlimited
            number. Ways that use the same coins in a different order count once.

            Input
            The first line holds n and A (1 <= n <= 7, 0 <= A <= 500). The second line holds n distinct
            denominations, each between 1 and 30.

            Output
            The number of ways modulo 1000000007 (paying 0 has exactly one way: no coins).
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n, amount = data[0], data[1]
            ways = [1] + [0] * amount
            for coin in data[2:2 + n]:
                for total in range(coin, amount + 1):
                    ways[total] = (ways[total] + ways[total - coin]) % 1000000007
            print(ways[amount])
        """,
        example="3 5\n1 2 5\n",
        generate=_coins,
    ),
    BundledSpec(
        slug="min-coins",
        difficulty="hard",
        statement="""
            Fewest coins

            Pay an amount exactly with as few coins as possible; every denomination is available in unlimited
            number.

            Input
            The first line holds n and A (1 <= n <= 7, 0 <= A <= 500). The second line holds n distinct
            denominations, each between 1 and 30.

            Output
            The least number of coins that add up to exactly A, or -1 if A cannot be paid.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n, amount = data[0], data[1]
            inf = float("inf")
            fewest = [0] + [inf] * amount
            for total in range(1, amount + 1):
                for coin in data[2:2 + n]:
                    if coin <= total and fewest[total - coin] + 1 < fewest[total]:
                        fewest[total] = fewest[total - coin] + 1
            print(fewest[amount] if fewest[amount] != inf else -1)
        """,
        example="3 11\n2 5 10\n",
        generate=_coins,
    ),
    BundledSpec(
        slug="lis-length",
        difficulty="hard",
        statement="""
            Longest increasing subsequence

            Find the length of the longest strictly increasing subsequence of an array (a subsequence keeps
            elements in order but may skip some).

            Input
            The first line holds n (1 <= n <= 300). The second line holds n integers between 1 and 1000.

            Output
            The length of a longest strictly increasing subsequence.
        """,
        reference="""
            import sys
            from bisect import bisect_left
            data = list(map(int, sys.stdin.read().split()))
            tails = []
            for value in data[1:1 + data[0]]:
                i = bisect_left(tails, value)
                if i == len(tails):
                    tails.append(value)
                else:
                    tails[i] = value
            print(len(tails))
        """,
        example="8\n10 9 2 5 3 7 101 18\n",
        generate=_sequence,
    ),
    BundledSpec(
        slug="maze-shortest-path",
        difficulty="hard",
        statement="""
            Shortest way through a maze

            Walk from S to T on a grid, one step at a time to a cell that shares a side with the current one,
            never entering a wall (#) or leaving the grid.

            Input
            The first line holds r and c (2 <= r, c <= 12). Each of the next r lines holds c characters: . for
            free cells, # for walls, and exactly one S and one T.

            Output
            The least number of steps from S to T, or -1 if T cannot be reached.
        """,
        reference="""
            import sys
            from collections import deque
            data = sys.stdin.read().split()
            r, c = int(data[0]), int(data[1])
            grid = data[2:2 + r]
            start = next((i, j) for i in range(r) for j in range(c) if grid[i][j] == "S")
            dist = {start: 0}
            queue = deque([start])
            answer = -1
            while queue:
                i, j = queue.popleft()
                if grid[i][j] == "T":
                    answer = dist[(i, j)]
                    break
                for ni, nj in ((i + 1, j), (i - 1, j), (i, j + 1), (i, j - 1)):
                    if 0 <= ni < r and 0 <= nj < c and grid[ni][nj] != "#" and (ni, nj) not in dist:
                        dist[(ni, nj)] = dist[(i, j)] + 1
                        queue.append((ni, nj))
            print(answer)
        """,
        example="3 4\nS.#.\n.##T\n....\n",
        generate=_maze,
    ),
    BundledSpec(
        slug="dijkstra",
        difficulty="hard",
        statement="""
            Cheapest route

            Find the length of a shortest route from city 1 to city n over two-way roads of given lengths.

            Input
            The first line holds n and m (2 <= n <= 15, 0 <= m <= 22). Each of the next m lines holds a road
            u v w: it joins cities u and v (1 <= u, v <= n, u != v) and has length w (1 <= w <= 20).

            Output
            The length of a shortest route from city 1 to city n, or -1 if there is none.
        """,
        reference="""
            import sys
            import heapq
            data = list(map(int, sys.stdin.read().split()))
            n, m = data[0], data[1]
            adjacent = [[] for _ in range(n + 1)]
            for i in range(m):
                u, v, w = data[2 + 3 * i:5 + 3 * i]
                adjacent[u].append((v, w))
                adjacent[v].append((u, w))
            dist = [None] * (n + 1)
            heap = [(0, 1)]
            while heap:
                d, u = heapq.heappop(heap)
                if dist[u] is not None:
                    continue
                dist[u] = d
                for v, w in adjacent[u]:
                    if dist[v] is None:
                        heapq.heappush(heap, (d + w, v))
            print(dist[n] if dist[n] is not None else -1)
        """,
        example="4 4\n1 2 5\n2 4 5\n1 3 2\n3 4 9\n",
        generate=lambda rng: _graph(rng, max_n=15, weights=True),
    ),
    BundledSpec(
        slug="count-components",
        difficulty="hard",
        statement="""
            Connected components

            Count the connected components of an undirected graph (a vertex without edges is a component of its
            own).

            Input
            The first line holds n and m (2 <= n <= 12, 0 <= m <= 18). Each of the next m lines holds an edge u v
            (1 <= u, v <= n, u != v).

            Output
            The number of connected components.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n, m = data[0], data[1]
            parent = list(range(n + 1))

            def find(x):
                while parent[x] != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            components = n
            for i in range(m):
                a, b = find(data[2 + 2 * i]), find(data[3 + 2 * i])
                if a != b:
                    parent[a] = b
                    components -= 1
            print(components)
        """,
        example="5 3\n1 2\n2 3\n4 5\n",
        generate=_graph,
    ),
    BundledSpec(
        slug="topological-order",
        difficulty="hard",
        statement="""
            Task order

            Tasks 1..n must be done one at a time; a rule u v says task u must be done before task v. Find the
            order that respects every rule and is lexicographically smallest (at every point, do the
            smallest-numbered task whose prerequisites are all done).

            Input
            The first line holds n and m (1 <= n <= 10, 0 <= m <= 21). Each of the next m lines holds a rule u v
            (1 <= u, v <= n, u != v).

            Output
            The n tasks in that order on one line, separated by spaces, or IMPOSSIBLE if the rules contradict
            each other.
        """,
        reference="""
            import sys
            import heapq
            data = list(map(int, sys.stdin.read().split()))
            n, m = data[0], data[1]
            after = [[] for _ in range(n + 1)]
            needs = [0] * (n + 1)
            for i in range(m):
                u, v = data[2 + 2 * i], data[3 + 2 * i]
                after[u].append(v)
                needs[v] += 1
            ready = [t for t in range(1, n + 1) if needs[t] == 0]
            heapq.heapify(ready)
            order = []
            while ready:
                t = heapq.heappop(ready)
                order.append(t)
                for v in after[t]:
                    needs[v] -= 1
                    if needs[v] == 0:
                        heapq.heappush(ready, v)
            print(" ".join(map(str, order)) if len(order) == n else "IMPOSSIBLE")
        """,
        example="4 3\n3 1\n2 1\n4 2\n",
        generate=_dag,
    ),
    BundledSpec(
        slug="activity-selection",
        difficulty="hard",
        statement="""
            Most meetings

            Attend as many meetings as possible. Meetings run over half-open intervals [s, e); you can attend
            one meeting at a time, so two chosen meetings may touch (one ends at t, the next starts at t) but
            not overlap.

            Input
            The first line holds n (1 <= n <= 15). Each of the next n lines holds s and e (0 <= s < e <= 52).

            Output
            The largest number of meetings you can attend.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            meetings = sorted((data[2 + 2 * i], data[1 + 2 * i]) for i in range(data[0]))
            free, count = -1, 0
            for end, start in meetings:
                if start >= free:
                    count += 1
                    free = end
            print(count)
        """,
        example="4\n1 4\n3 5\n4 7\n5 8\n",
        generate=lambda rng: _jobs(rng, profit=False),
    ),
    BundledSpec(
        slug="count-islands",
        difficulty="hard",
        statement="""
            Islands

            Count the islands of a map: an island is a maximal group of land cells (#) connected through cells
            that share a side.

            Input
            The first line holds r and c (1 <= r, c <= 10). Each of the next r lines holds c characters, # for
            land and . for water.

            Output
            The number of islands.
        """,
        reference="""
            import sys
            data = sys.stdin.read().split()
            r, c = int(data[0]), int(data[1])
            grid = [list(row) for row in data[2:2 + r]]
            islands = 0
            for i in range(r):
                for j in range(c):
                    if grid[i][j] != "#":
                        continue
                    islands += 1
                    grid[i][j] = "."
                    stack = [(i, j)]
                    while stack:
                        y, x = stack.pop()
                        for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                            if 0 <= ny < r and 0 <= nx < c and grid[ny][nx] == "#":
                                grid[ny][nx] = "."
                                stack.append((ny, nx))
            print(islands)
        """,
        example="3 5\n##..#\n#..##\n..#..\n",
        generate=_land,
    ),
    BundledSpec(
        slug="bipartite-check",
        difficulty="hard",
        statement="""
            Two teams

            Decide whether the vertices of an undirected graph can be split into two groups so that every edge
            joins vertices of different groups.

            Input
            The first line holds n and m (2 <= n <= 12, 0 <= m <= 18). Each of the next m lines holds an edge u v
            (1 <= u, v <= n, u != v).

            Output
            YES if such a split exists, NO otherwise.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n, m = data[0], data[1]
            adjacent = [[] for _ in range(n + 1)]
            for i in range(m):
                u, v = data[2 + 2 * i], data[3 + 2 * i]
                adjacent[u].append(v)
                adjacent[v].append(u)
            color = [None] * (n + 1)
            ok = True
            for s in range(1, n + 1):
                if color[s] is not None:
                    continue
                color[s] = 0
                stack = [s]
                while stack and ok:
                    u = stack.pop()
                    for v in adjacent[u]:
                        if color[v] is None:
                            color[v] = 1 - color[u]
                            stack.append(v)
                        elif color[v] == color[u]:
                            ok = False
            print("YES" if ok else "NO")
        """,
        example="4 4\n1 2\n2 3\n3 4\n4 1\n",
        generate=_graph,
    ),
    BundledSpec(
        slug="mst-weight",
        difficulty="hard",
        statement="""
            Cheapest network

            Connect all n cities by choosing roads of least total length so that every city can reach every
            other.

            Input
            The first line holds n and m (2 <= n <= 15, 0 <= m <= 22). Each of the next m lines holds a road
            u v w (1 <= u, v <= n, u != v, 1 <= w <= 20).

            Output
            The least total length of roads that connect all cities, or -1 if the roads cannot connect them.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n, m = data[0], data[1]
            roads = sorted((data[4 + 3 * i], data[2 + 3 * i], data[3 + 3 * i]) for i in range(m))
            parent = list(range(n + 1))

            def find(x):
                while parent[x] != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            total, joined = 0, 0
            for w, u, v in roads:
                a, b = find(u), find(v)
                if a != b:
                    parent[a] = b
                    total += w
                    joined += 1
            print(total if joined == n - 1 else -1)
        """,
        example="4 5\n1 2 3\n2 3 1\n3 4 4\n1 4 2\n1 3 5\n",
        generate=lambda rng: _graph(rng, max_n=15, weights=True),
    ),
    BundledSpec(
        slug="grid-paths",
        difficulty="hard",
        statement="""
            Paths around rocks

            Count the paths from the top-left to the bottom-right cell of a grid that move only right or down
            and never enter a rock (#).

            Input
            The first line holds r and c (1 <= r, c <= 18). Each of the next r lines holds c characters, . for
            free cells and # for rocks.

            Output
            The number of such paths modulo 1000000007 (0 if the start or the end is a rock).
        """,
        reference="""
            import sys
            data = sys.stdin.read().split()
            r, c = int(data[0]), int(data[1])
            grid = data[2:2 + r]
            ways = [0] * c
            for i in range(r):
                for j in range(c):
                    if grid[i][j] == "#":
                        ways[j] = 0
                    elif i == 0 and j == 0:
                        ways[j] = 1
                    elif j > 0:
                        ways[j] = (ways[j] + ways[j - 1]) % 1000000007
            print(ways[c - 1])
        """,
        example="3 3\n...\n.#.\n...\n",
        generate=_obstacles,
    ),
    BundledSpec(
        slug="house-robber",
        difficulty="hard",
        statement="""
            No two neighbours

            Pick houses along a street to collect the most money, never picking two adjacent houses.

            Input
            The first line holds n (1 <= n <= 300). The second line holds n integers a_1 ... a_n
            (1 <= a_i <= 1000), the money in each house.

            Output
            The largest total of a set of houses with no two adjacent (the empty set, total 0, is allowed).
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            take, skip = 0, 0
            for value in data[1:1 + data[0]]:
                take, skip = skip + value, max(take, skip)
            print(max(take, skip))
        """,
        example="5\n2 7 9 3 1\n",
        generate=_sequence,
    ),
    BundledSpec(
        slug="equal-partition",
        difficulty="hard",
        statement="""
            Fair split

            Decide whether a list of positive integers can be split into two groups with equal sums (every
            number goes into exactly one group).

            Input
            The first line holds n (1 <= n <= 20). The second line holds n integers between 1 and 1000.

            Output
            YES if such a split exists, NO otherwise.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            values = data[1:1 + data[0]]
            total = sum(values)
            reachable = 1
            for v in values:
                reachable |= reachable << v
            print("YES" if total % 2 == 0 and reachable >> (total // 2) & 1 else "NO")
        """,
        example="4\n1 5 11 5\n",
        generate=_partition,
    ),
    BundledSpec(
        slug="min-jumps",
        difficulty="hard",
        statement="""
            Fewest jumps

            Stand on position 1 of a row of n positions; from position i you may jump forward to any position
            from i + 1 to i + a_i. Reach position n with as few jumps as possible.

            Input
            The first line holds n (1 <= n <= 30). The second line holds n integers a_1 ... a_n
            (0 <= a_i <= 3).

            Output
            The least number of jumps to reach position n (0 if n = 1), or -1 if it cannot be reached.
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n, a = data[0], data[1:1 + data[0]]
            jumps, reach, frontier = 0, 0, 0
            for i in range(n - 1):
                reach = max(reach, i + a[i])
                if i == frontier:
                    if reach <= i:
                        break
                    jumps += 1
                    frontier = reach
            print(jumps if frontier >= n - 1 else -1)
        """,
        example="5\n2 3 1 1 4\n",
        generate=_jumps,
    ),
    BundledSpec(
        slug="tree-diameter",
        difficulty="hard",
        statement="""
            Longest path in a tree

            Find the number of edges on the longest simple path of a tree.

            Input
            The first line holds n (1 <= n <= 30). Each of the next n - 1 lines holds an edge u v of the tree
            (1 <= u, v <= n).

            Output
            The number of edges of a longest path between two vertices (0 if n = 1).
        """,
        reference="""
            import sys
            data = list(map(int, sys.stdin.read().split()))
            n = data[0]
            adjacent = [[] for _ in range(n + 1)]
            for i in range(n - 1):
                u, v = data[1 + 2 * i], data[2 + 2 * i]
                adjacent[u].append(v)
                adjacent[v].append(u)

            def farthest(start):
                dist = {start: 0}
                stack = [start]
                while stack:
                    u = stack.pop()
                    for v in adjacent[u]:
                        if v not in dist:
                            dist[v] = dist[u] + 1
                            stack.append(v)
                node = max(dist, key=dist.get)
                return node, dist[node]

            end, _ = farthest(1)
            print(farthest(end)[1])
        """,
        example="5\n1 2\n2 3\n2 4\n4 5\n",
        generate=_tree,
    ),
    BundledSpec(
        slug="weighted-scheduling",
        difficulty="hard",
        statement="""
            Paid jobs

            Each job runs over a half-open interval [s, e) and pays p. Choose jobs that do not overlap (one may
            start exactly when another ends) to earn the most.

            Input
            The first line holds n (1 <= n <= 15). Each of the next n lines holds s, e and p
            (0 <= s < e <= 52, 1 <= p <= 50).

            Output
            The largest total pay of a set of non-overlapping jobs.
        """,
        reference="""
            import sys
            from bisect import bisect_right
            data = list(map(int, sys.stdin.read().split()))
            jobs = sorted((data[2 + 3 * i], data[1 + 3 * i], data[3 + 3 * i]) for i in range(data[0]))
            ends = [end for end, _, _ in jobs]
            best = [0]
            for end, start, pay in jobs:
                before = bisect_right(ends, start)
                best.append(max(best[-1], best[before] + pay))
            print(best[-1])
        """,
        example="4\n1 3 20\n2 5 20\n3 10 100\n4 6 70\n",
        generate=lambda rng: _jobs(rng, profit=True),
    ),
)
