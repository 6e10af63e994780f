/// Prints rows as left-aligned columns separated by two spaces; the first row is the header.
func printColumns(_ rows: [[String]]) {
    let widths = rows.reduce(into: [Int]()) { widths, row in
        for (column, cell) in row.enumerated() {
            if column == widths.count { widths.append(0) }
            widths[column] = max(widths[column], cell.count)
        }
    }
    for row in rows {
        let cells = row.enumerated().map { column, cell in
            column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
        }
        print(cells.joined(separator: "  "))
    }
}
