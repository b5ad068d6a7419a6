package tools

// WithoutFolders is withoutFolders, for the tests.
var WithoutFolders = withoutFolders
